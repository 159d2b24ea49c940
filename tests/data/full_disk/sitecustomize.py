"""A full disk under one folder (KLT_FULL: its prefix; KLT_FULL_AFTER: the bytes written before
ENOSPC): os.write fails there, every other write goes through. On PYTHONPATH as sitecustomize
(tests/test_nothing_lost.py, bench/hostile_probes.py)."""
import errno, os
_PREFIX = os.environ.get("KLT_FULL")
if _PREFIX:
    _write, _left = os.write, [int(os.environ.get("KLT_FULL_AFTER", "0"))]

    def _full_write(fd, data):
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            path = ""
        if not path.startswith(_PREFIX):
            return _write(fd, data)
        if _left[0] <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = min(len(data), _left[0])
        _left[0] -= n
        return _write(fd, bytes(data[:n]))
    os.write = _full_write
