"""float_config_cells: the launcher looks its launch config up in a tuned-config table that a
pandas merge wrote with the integers of one column as floats ("16.0"); the lookup compares
"16" with "16.0", never matches, and every call silently gets the table's generic row.

y = silu(gate) * up over [M, N] (the gated MLP's activation), one program per BLOCK_M x BLOCK_N
tile, computed in float32. The config table (float_config_cells.csv, the library's merged
default) has a row per tuned (M, N) and a generic row per N with M left blank (any M); the
blank cells made pandas write that column's integers as floats.
"""
import csv
import os

import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="float_config_cells",
    gap="toolchain",
    rung=7,
    mirrors="aiter #6360 (878 cells written as floats; the key '1' never matched '1.0')",
    needs="cpu",
    story=(
        "silu_mul looks (M, N) up in the library's default config table, the merge of two tuning "
        "sweeps' CSV files (decode shapes, prefill shapes) with a generic row per N whose M is "
        "blank. pandas wrote the M column, which has blank cells, as floats: 1 became '1.0' and "
        "16 became '16.0'. The lookup compares the cell with str(M), so '1' never matches '1.0' "
        "and every call falls through to the generic row: BLOCK_M = 4, BLOCK_N = 64, right and "
        "slow. Runs that named one sweep's CSV file directly (ints as ints) worked; only the merged "
        "default, the file production loads, is wrong. No value is wrong, so rungs 1-4 pass it. "
        "Rung 7 catches it: the spec says that each tuned production shape runs the tuned config "
        "(`kl.Expect('_silu_mul_kernel', when={'M': 16, 'N': 1024}, launch={'BLOCK_M': 16, "
        "'BLOCK_N': 256, 'num_warps': 8}, label='the tuned config')`, one per shape the sweeps "
        "tuned), and its dispatch points at those shapes find the generic config's launch "
        "instead, and name it. The twin reads the key cells as numbers."
    ),
)

TABLE_PATH = os.path.join(os.path.dirname(__file__), "float_config_cells.csv")
GENERIC = {"BLOCK_M": 4, "BLOCK_N": 64, "num_warps": 4}        # for an N the table does not hold
# what the two tuning sweeps measured, (M, N) -> config: the author's record, in the spec below
SWEPT = {(1, 512): {"BLOCK_M": 2, "BLOCK_N": 512, "num_warps": 2},
         (1, 1024): {"BLOCK_M": 2, "BLOCK_N": 1024, "num_warps": 4},
         (16, 512): {"BLOCK_M": 16, "BLOCK_N": 128, "num_warps": 4},
         (16, 1024): {"BLOCK_M": 16, "BLOCK_N": 256, "num_warps": 8}}


def _read_table(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


_TABLE = _read_table(TABLE_PATH)      # read once, at import, as the library does


def _config(row):
    return {"BLOCK_M": int(row["BLOCK_M"]), "BLOCK_N": int(row["BLOCK_N"]), "num_warps": int(row["num_warps"])}


def _lookup(M, N, key):
    """The tuned row for (M, N), else the generic row for N, else the generic config."""
    for row in _TABLE:
        if key(row["M"]) == str(M) and key(row["N"]) == str(N):
            return _config(row)
    for row in _TABLE:
        if row["M"] == "" and key(row["N"]) == str(N):
            return _config(row)
    return dict(GENERIC)


def _as_written(cell):
    # The bug: the cell is compared as written, and pandas wrote 16 as "16.0".
    return cell


def _as_number(cell):
    # The fix: a key cell is a number, whichever way the merge wrote it.
    return str(int(float(cell))) if cell else ""


@triton.jit
def _silu_mul_kernel(g_ptr, u_ptr, y_ptr, M, N, stride_g, stride_u, stride_y,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    g = tl.load(g_ptr + rm[:, None] * stride_g + rn[None, :], mask=mask, other=0.0).to(tl.float32)
    u = tl.load(u_ptr + rm[:, None] * stride_u + rn[None, :], mask=mask, other=0.0).to(tl.float32)
    y = g / (1.0 + tl.exp(-g)) * u
    tl.store(y_ptr + rm[:, None] * stride_y + rn[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


def _launch(gate, up, key):
    # rows are walked with unit inner stride: other layouts are made so first (a copy)
    gate = gate if gate.stride(-1) == 1 else gate.contiguous()
    up = up if up.stride(-1) == 1 else up.contiguous()
    M, N = gate.shape
    cfg = _lookup(M, N, key)
    y = torch.empty_like(gate)
    grid = (triton.cdiv(M, cfg["BLOCK_M"]), triton.cdiv(N, cfg["BLOCK_N"]))
    _silu_mul_kernel[grid](gate, up, y, M, N, gate.stride(0), up.stride(0), y.stride(0), **cfg)
    return y


def silu_mul(gate, up):
    """silu(gate) * up over [M, N] (bf16/fp16), in float32, with the tuned config for (M, N)."""
    return _launch(gate, up, _as_written)


def silu_mul_fixed(gate, up):
    return _launch(gate, up, _as_number)


def silu_mul_ref(gate, up):
    return torch.nn.functional.silu(gate) * up


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "silu_mul",
        kernel=kernel,
        reference=silu_mul_ref,
        args={"gate": kl.Tensor("M N", dtype=["bfloat16", "float16"]),
              "up": kl.Tensor("M N", like="gate")},
        returns=kl.Tensor("M N", like="gate"),
        dims={"M": kl.Dim(1, 4096), "N": kl.Dim(1, 16384, tile=64, widths=[512, 1024])},
        production=[{"M": m, "N": n} for m, n in SWEPT],
        tuned=[{"M": m, "N": n} for m, n in SWEPT],
        # each shape the sweeps tuned runs the config they measured best
        toolchain=kl.Toolchain(expect=[kl.Expect("_silu_mul_kernel", when={"M": m, "N": n}, launch=cfg, label="the tuned config")
                for (m, n), cfg in SWEPT.items()]),
    )


spec, fixed = build_specs(make_spec, silu_mul, silu_mul_fixed)
