"""The zoo through the CLI, on the CPU, as a user climbs it: every CPU-capable rung-1 case
is caught at rung 1 where its mechanism bites and nowhere else, with the expected pattern;
the rung-2, -3 and -4 cases by their own rung; every fixed twin is clean (zero failures).

The cases are climbed in batches (tests/conftest.py: ZOO_BATCHES, `kladder zoo climb A B ...`
as `make zoo` climbs them), each batch once a session, on every point of each case's rung."""
import pytest
from conftest import zoo_param

CPU_CASES = ["gemm_k_tail", "rmsnorm_n_tail", "config_writes_zeros", "untuned_fallback", "nan_blind", "small_overrun",
             "empty_like_overrun", "router_lanes_256", "active_count_full_width",
             "embedding_chunk_tail"]
GPU_CASES = ["rows_int32_offset", "last_tile_wrap"]
# rung-4 case -> (the mode that catches it, the call it names)
RUNG4_CAUGHT = {"jit_key_closure": ("aba", "call 2 of 3 (B)"), "stale_state": ("aba", "call 2 of 3 (B)"),
                "plan_cache_restart": ("jitcache", "A in a process on the warm cache"),
                "undeclared_mutation": ("compiled", "call 1 of 2 (compiles)")}
RUNG4_CASES = list(RUNG4_CAUGHT)


def ran(doc):
    return [pt for pt in doc["rungs"][0]["points"] if pt["status"] != "skipped"]


def climbed(doc):
    return [r["rung"] for r in doc["rungs"] if r["climbed"]]


TWINS = [zoo_param(c) for c in CPU_CASES + GPU_CASES] + [zoo_param(c) for c in RUNG4_CASES] + \
    [zoo_param(c, batch="r4t1") for c in ("jit_key_closure", "stale_state")]


@pytest.mark.parametrize("case", TWINS)
def test_fixed_twin_is_clean(case, zoo_case, request):
    # a twin is climbed on its case's own rung, and the A-B-A cases' on rung 1 too (batch r4t1);
    # `zoo_check.py` climbs every twin on every rung
    z = zoo_case(case)
    rungs = [1] if case not in RUNG4_CASES or request.node.callspec.id.endswith("r4t1") else [4]
    assert climbed(z.twin) == rungs
    assert z.twin["exit_code"] == 0, z.text[-3000:]
    pts = [pt for r in z.twin["rungs"] for pt in r["points"]]
    assert all(pt["status"] in ("passed", "skipped") for pt in pts)
    assert sum(pt["status"] == "passed" for pt in pts) >= 5
    if case in GPU_CASES:
        # the GPU cases' big points (2^31 and 2^32 bytes) are skipped on the CPU with a reason; the
        # buggy kernel has the same points (its spec is the twin's): `make zoo` does not climb it here
        big = [pt for pt in z.twin["rungs"][0]["points"] if pt["kind"] == "big"]
        assert big and all(pt["status"] == "skipped" and "GPU point" in pt["reason"] for pt in big)
        assert any("2^32 bytes" in pt["why"] for pt in big)
        assert climbed(z.bug) == [] and z.row["verdict"] == "needs_gpu" and z.row["twin_clean"]


@pytest.mark.parametrize("case", [zoo_param(c) for c in CPU_CASES])
def test_buggy_kernel_is_caught_at_rung_1(case, zoo_case):
    z = zoo_case(case)
    assert z.bug["exit_code"] == 1, z.text[-3000:]
    assert z.bug["lowest_failing_rung"] == 1 and z.row["verdict"] == "caught"
    assert "FAILED" in z.text and "repro:    kladder repro" in z.text


def cfg(pt, key):
    return dict(pt["point"]["config"]).get(key)


def size(pt, dim):
    return dict(pt["point"]["dims"])[dim]


@pytest.mark.parametrize("case", [zoo_param(c) for c in CPU_CASES])
def test_caught_exactly_where_the_mechanism_bites(case, zoo_case):
    pts = ran(zoo_case(case).bug)
    failed = {pt["id"] for pt in pts if pt["status"] == "failed"}
    if case == "gemm_k_tail":
        # the K loop runs K // BLOCK_K times: right exactly when the tile divides K
        # the K loop runs K // BLOCK_K times: never wrong where the tile divides K; wrong where
        # it does not, except where the dropped tail hides inside the tolerance (one term of
        # a 1 x 1 output can be smaller than fp16's 1e-3 of the sum's scale)
        explicit = [pt for pt in pts if cfg(pt, "BLOCK_K")]
        tail = [pt for pt in explicit if size(pt, "K") % cfg(pt, "BLOCK_K")]
        assert explicit and all(pt["id"] not in failed for pt in explicit if pt not in tail)
        assert all(pt["id"] in failed for pt in tail if size(pt, "M") * size(pt, "N") >= 16)
        assert sum(pt["id"] in failed for pt in tail) >= 0.9 * len(tail)
    elif case == "rmsnorm_n_tail":
        assert all((pt["id"] in failed) == (size(pt, "N") % 8 != 0) for pt in pts)
        for pt in pts:
            n = size(pt, "N")
            if pt["id"] in failed and n > 8:
                k = n % 8
                want = f"the last {k} columns (N % 8 = {k}) of every row" if k > 1 else "the last column (N % 8 = 1) of every row"
                assert pt["pattern"] == want
    elif case == "config_writes_zeros":
        explicit = [pt for pt in pts if cfg(pt, "BLOCK_K")]
        assert all((pt["id"] in failed) == (cfg(pt, "BLOCK_K") == 16) for pt in explicit)
        assert any(pt["kind"] == "config" and pt["id"] in failed for pt in pts)
    elif case == "untuned_fallback":
        prod = [pt for pt in pts if pt["kind"] == "production"]
        assert prod and all(pt["id"] in failed for pt in prod)
        assert all("no tuned entry" in pt["why"] for pt in prod)
    elif case == "nan_blind":
        bad = [pt for pt in pts if pt["id"] in failed]
        assert bad and all(pt["findings"][0]["facts"]["nonfinite"] > 0 for pt in bad)
        assert any("whole rows" in pt["pattern"] for pt in bad)
    elif case == "small_overrun":
        assert all((pt["id"] in failed) == (size(pt, "M") * size(pt, "N") % 8 != 0) for pt in pts)
        assert all(pt["failure"] == "guard" and pt["pattern"] == "a write past the end"
                   for pt in pts if pt["id"] in failed)
    elif case in ("router_lanes_256", "active_count_full_width"):
        # E = kl.Dim(sizes=...): rung 1 lists every declared size; only the widest one bites (an
        # expert past lane 255; no lane one past the last expert)
        widest = 512 if case == "router_lanes_256" else 256
        assert {size(pt, "E") for pt in pts} >= {8, 16, 64, 128, 256, widest}
        assert all((pt["id"] in failed) == (size(pt, "E") == widest) for pt in pts)
        if case == "active_count_full_width":
            assert all(pt["findings"][0]["output"] == "n_active" for pt in pts if pt["id"] in failed)
    elif case == "embedding_chunk_tail":
        # only the chunked path (rows wider than 8192) with a partial last chunk: the top tails
        assert all((pt["id"] in failed) == (size(pt, "D") > 8192 and size(pt, "D") % 2048 != 0) for pt in pts)
        assert {size(pt, "D") for pt in pts if pt["id"] in failed} == {14337, 16383}
    elif case == "empty_like_overrun":
        # the output is the launcher's own torch.empty_like: its guard bytes catch the tail's
        # stores, and every point without a tail passes (no heap damage reaches it)
        assert all(pt["status"] in ("passed", "failed") for pt in pts)
        assert all((pt["id"] in failed) == (size(pt, "N") % 1024 != 0) for pt in pts)
        for pt in pts:
            if pt["id"] in failed:
                f = pt["findings"][0]
                assert pt["failure"] == "guard" and pt["pattern"] == "a write past the end"
                assert f["output"] == "out" and f["facts"]["allocated"]["op"] == "empty_like"
                n, width = size(pt, "N"), 4 if "float32" in pt["id"] else 2
                assert f["facts"]["n_after"] == (-n % 1024) * width


@pytest.mark.parametrize("case", [zoo_param(c) for c in RUNG4_CASES])
def test_rung_4_cases_are_caught_by_their_mode_alone_and_name_the_call(case, zoo_case):
    mode, call = RUNG4_CAUGHT[case]
    z = zoo_case(case)
    assert z.bug["exit_code"] == 1, z.text[-3000:]
    assert 4 in climbed(z.bug) and z.bug["lowest_failing_rung"] == 4
    bad = [pt for pt in z.points("bug", 4) if pt["status"] == "failed"]
    assert bad and all(pt["mode"] == mode for pt in bad)
    assert all(pt["findings"][0]["call"] == call for pt in bad)
    assert f"call:     {call} ({mode} mode)" in z.text


# rung-2 and rung-3 cases: the buggy kernel caught by its own rung alone, the twin clean there
# (zoo_check.py climbs every twin on every rung: see the closing notes and docs/results)
RUNG23_CASES = {"chunked_prefill_short": 2, "bias_tile_index": 2, "router_tie_pack": 2, "lowp_probs_underflow": 2,
                "assumes_contiguous": 3, "padding_scale_read": 3, "scale_layout_mismatch": 3, "shared_kernel_reference": 3,
                "input_scratch": 3, "expert_wgrad_unwritten": 2}
RUNG23_CHECK = {"lowp_probs_underflow": "invariant",
                "padding_scale_read": "values", "input_scratch": "input_changed"}


@pytest.mark.parametrize("case", [zoo_param(c) for c in RUNG23_CASES])
def test_rung_2_and_3_cases_are_caught_by_their_own_rung_and_twins_pass_it(case, zoo_case):
    rung = RUNG23_CASES[case]
    z = zoo_case(case)
    assert climbed(z.bug) == climbed(z.twin) == [rung]
    assert z.bug["exit_code"] == 1, z.text[-3000:]
    if case == "shared_kernel_reference":
        # the bug is the reference's: one BROKEN point naming it, no failure of the kernel; the
        # zoo counts the broken reference as the catch (zoo_rows.reference_rung)
        pts = z.points("bug", rung)
        broken = [pt for pt in pts if pt["status"] == "broken"]
        assert [pt["note"]["kind"] for pt in broken] == ["reference_not_independent"]
        assert not [pt for pt in pts if pt["status"] == "failed"] and z.bug["lowest_failing_rung"] is None
        assert "_rmsnorm_kernel" in broken[0]["reason"] and "not independent" in z.text
        assert z.row["verdict"] == "caught"                                  # the broken reference is the catch
        assert z.twin["exit_code"] == 0, z.text[-3000:]
        return
    bad = [pt for pt in z.points("bug", rung) if pt["status"] == "failed"]
    assert bad and z.bug["lowest_failing_rung"] == rung
    if case in RUNG23_CHECK:
        assert any(pt["failure"] == RUNG23_CHECK[case] for pt in bad)
    if rung == 2:   # each failure names its value kind, or is a length around a chunk
        assert all(pt["point"].get("values") or pt["kind"] == "chunk" for pt in bad)
    if case == "expert_wgrad_unwritten":
        # at the wide shape random routing reaches every expert: only the id kinds that leave
        # an expert without a token fail there (kl.Size and range=(0, 'E-1') in the spec)
        wide = max(size(pt, "T") for pt in bad)
        kinds = {dict(pt["point"]["values"])["expert_ids"] for pt in bad if size(pt, "T") == wide}
        assert {"ids/unused", "ids/same", "ids/ends"} <= kinds <= {"ids/unused", "ids/same", "ids/ends", "lengths"}
    assert z.twin["exit_code"] == 0, z.text[-3000:]
