"""Calling only: how a point's kernel is called and kept from taking the climb down with it.

harness.py   prepare inputs, call the kernel, run the reference
modes/       one module per execution mode; each yields what it observed, never a finding
trial.py     one point in this process: a mode's observations fed to the checks
faults.py    what an exception, a dead or a silent worker means (crash, hang, device fault, OOM)
workers.py   the parent's side of a worker process; pool.py the pool of them and the lanes
timeouts.py  the timeout rule; sampling.py what else used the host and the device
worker.py    the worker process itself; protocol.py the messages between it and its parent (and the
             fork server's, forkserver.py and forkclient.py); rerun.py when a point is run again"""
