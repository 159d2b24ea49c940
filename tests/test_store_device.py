"""The outcome store's key on CUDA from nvidia-smi (history/outcomes.smi_fingerprint): a climb
whose points are all stored waits for no worker's hello; where the device cannot be told for sure
(no nvidia-smi, a MIG device, an index that is not there) the worker's hello decides."""
import os
import stat

from kladder.history.key import toolchain_of
from kladder.history.outcomes import smi_fingerprint

ROWS = ("0, GPU-1111aaaa-0000, NVIDIA H100 80GB HBM3, 9.0, 580.65.06\n"
        "1, GPU-2222bbbb-0000, NVIDIA A100-SXM4-40GB, 8.0, 580.65.06\n")


def _smi(tmp_path, text=ROWS, code=0) -> str:
    path = tmp_path / "nvidia-smi"
    path.write_text(f"#!/bin/sh\ncat <<'EOF'\n{text}EOF\nexit {code}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_the_device_comes_from_nvidia_smi_as_the_visible_devices_pick_it(tmp_path):
    smi = _smi(tmp_path)
    fp = smi_fingerprint({}, smi)
    t = toolchain_of(fp)
    assert (t["device"], t["capability"], t["arch"], t["count"]) == ("NVIDIA H100 80GB HBM3", "9.0", "sm_90", 2)
    assert t["driver"] and t["torch"]
    one = toolchain_of(smi_fingerprint({"CUDA_VISIBLE_DEVICES": "1"}, smi))
    assert (one["device"], one["capability"], one["count"]) == ("NVIDIA A100-SXM4-40GB", "8.0", 1)
    assert toolchain_of(smi_fingerprint({"CUDA_VISIBLE_DEVICES": "GPU-2222"}, smi))["device"] == "NVIDIA A100-SXM4-40GB"
    assert toolchain_of(smi_fingerprint({"CUDA_VISIBLE_DEVICES": "1,0"}, smi))["count"] == 2
    assert smi_fingerprint({}, smi) == smi_fingerprint({}, smi)          # the same facts, the same key's part


def test_what_cannot_be_told_for_sure_is_left_to_the_workers_hello(tmp_path):
    smi = _smi(tmp_path)
    assert smi_fingerprint({"CUDA_VISIBLE_DEVICES": "MIG-abcd"}, smi) is None
    assert smi_fingerprint({"CUDA_VISIBLE_DEVICES": "7"}, smi) is None
    assert smi_fingerprint({"CUDA_VISIBLE_DEVICES": ""}, smi) is None      # no device visible
    assert smi_fingerprint({}, _smi(tmp_path, code=9)) is None
    assert smi_fingerprint({}, _smi(tmp_path, text="garbage\n")) is None
    assert smi_fingerprint({}, os.path.join(str(tmp_path), "absent")) is None
