"""Inputs are part of the contract (checks/inputs.py): after a call every input holds the bytes
it was passed. A change fails the point naming the input and the elements (or, above the copy
limit, the rows of the hashed slabs that changed), unless the spec declares the mutation
(kl.Tensor(mutated=True)); a declared mutation is judged against the reference's own copy, which
the reference writes in place. Correct kernels, torch's own ops among them, pass at every layout,
a broadcast and padding included."""
import itertools
import math

import pytest
import torch

import kladder as kl
from kladder.checks import inputs as input_check
from kladder.gen.gaps import contracts, shapes, values
from kladder.core.outcome import Check
from kladder.report.words import message
from kladder.run.trial import run_point
from kladder.core.sizes import CPU_BUDGET

DIMS = {"M": kl.Dim(1, 64), "N": kl.Dim(1, 256, tile=16)}


def ref(a, b):
    return a + b


def make(kernel, reference=ref, a=None, **kw):
    return kl.Spec("add", kernel=kernel, reference=reference,
                   args={"a": a or kl.Tensor("M N", dtype=["float32", "bfloat16"]), "b": kl.Tensor("M N", like="a")},
                   returns=kl.Tensor("M N", like="a"), dims=DIMS, **kw)


def run(spec, gen, n=None):
    pts = list(gen.points(spec, CPU_BUDGET))
    return [run_point(spec, p, "cpu").outcome for p in (pts if n is None else pts[:n])]


def zeroes_a(a, b):
    out = a + b
    a.zero_()                      # after using it: the output is right
    return out


def scales_first_row(a, b):
    out = a + b
    a[:1].mul_(2)
    return out


def test_a_kernel_that_zeroes_its_input_fails_naming_it_and_its_elements():
    outs = run(make(zeroes_a), shapes, 6)
    assert outs and all(o.status == "failed" for o in outs)
    for o in outs:
        f = o.findings[0]
        assert f.check == Check.INPUT_CHANGED and f.output == "a" and f.facts.how == "copy"
        assert 0 < f.mismatched <= f.total
        assert "changed its input `a`" in message(f) and "mutated=True" in message(f)
    assert all(len(o.findings) == 1 for o in outs)          # the output is right: only the input is wrong


def test_the_changed_elements_are_located():
    spec = make(scales_first_row)
    p = next(p for p in shapes.points(spec, CPU_BUDGET) if p.sizes["M"] > 2 and p.sizes["N"] > 2)
    o = run_point(spec, p, "cpu").outcome
    f = o.findings[0]
    assert f.check == Check.INPUT_CHANGED and f.output == "a"
    assert f.mismatched <= p.sizes["N"] and f.pattern is not None     # row 0 only (a value x 2 == x only at 0)
    assert "row 0" in message(f) or "the first row" in message(f), message(f)


def test_correct_kernels_pass_at_every_layout_broadcast_included():
    outs = run(make(lambda a, b: a + b), contracts) + run(make(torch.add), shapes, 6)
    assert outs and all(o.status in ("passed", "skipped") for o in outs), \
        [(o.point.id, [message(f) for f in o.findings]) for o in outs if o.status == "failed"]
    assert sum(o.status == "passed" for o in outs) >= 10


def test_every_layout_point_catches_the_zeroing():
    outs = [o for o in run(make(zeroes_a), contracts) if o.point.layouts]
    assert outs and all(o.status == "failed" and o.findings[0].check == Check.INPUT_CHANGED for o in outs)


def writes_a_gap(a, b):
    """Right output, right elements; it scribbles on the memory between a sliced view's rows."""
    out = a + b
    if a.dim() == 2 and a.stride(0) > a.shape[1] and a.shape[0] > 1:
        wide = a.as_strided((a.shape[0] - 1, a.stride(0)), (a.stride(0), 1))
        wide[:, a.shape[1]:].fill_(0)
    return out


def test_a_write_between_a_strided_views_elements_is_seen_as_gap_bytes():
    spec = make(writes_a_gap)
    outs = [o for o in run(spec, contracts) if dict(o.point.layouts).get("a") == "sliced"]
    assert outs
    for o in outs:
        f = o.findings[0]
        assert f.check == Check.INPUT_CHANGED and f.mismatched == 0 and f.facts.gap_bytes > 0
        assert "between its elements" in message(f)


def test_above_the_copy_limit_a_hash_per_slab_sees_it_and_a_correct_kernel_passes(monkeypatch):
    monkeypatch.setattr(input_check, "SNAPSHOT_COPY_BYTES", 0)
    monkeypatch.setattr(input_check, "HASH_SLAB_BYTES", 64)
    bad = run(make(scales_first_row), shapes, 8)
    hit = [o for o in bad if o.status == "failed"]
    assert hit and all(o.findings[0].facts.how == "hash" and o.findings[0].output == "a" for o in hit)
    assert all(o.findings[0].facts.slabs >= 1 for o in hit)
    assert "slabs of rows hashed" in message(hit[0].findings[0])
    good = run(make(lambda a, b: a + b), contracts)
    assert all(o.status in ("passed", "skipped") for o in good)


def writes_padding(x, w):
    out = x[..., :12].float().sum(-1).to(x.dtype)
    x[..., 12:] = 0                # the padding holds no data: the kernel may use it
    return out


def test_padding_is_not_data_the_kernel_may_write_it():
    spec = kl.Spec("packed", kernel=writes_padding, reference=lambda x, w: x[..., :12].sum(-1),
                   args={"x": kl.Tensor("M 16", dtype="float32", valid=12), "w": kl.Tensor("M", dtype="float32")},
                   returns=kl.Tensor("M", like="x"), dims={"M": kl.Dim(1, 64)})
    outs = run(spec, contracts) + run(spec, shapes, 4)
    assert all(o.status in ("passed", "skipped") for o in outs), \
        [(o.point.id, [message(f) for f in o.findings]) for o in outs if o.status == "failed"]


def add_into_a(a, b):
    a.add_(b)
    return a * 2


def add_into_a_ref(a, b):
    a.add_(b)                      # the reference writes its own copy as the kernel writes its buffer
    return a * 2


def add_into_a_wrong(a, b):
    out = (a + b) * 2
    a.add_(b * 1.5)
    return out


def mutated(kernel):
    return make(kernel, add_into_a_ref, a=kl.Tensor("M N", dtype="float32", mutated=True))


def test_a_declared_mutation_is_judged_against_the_references_copy():
    good = run(mutated(add_into_a), shapes, 6) + run(mutated(add_into_a), contracts, 6)
    assert all(o.status in ("passed", "skipped") for o in good), [message(f) for o in good for f in o.findings]
    bad = run(mutated(add_into_a_wrong), shapes, 6)
    assert all(o.status == "failed" for o in bad)
    for o in bad:
        f = o.findings[0]
        assert f.check == Check.VALUES and f.output == "a" and f.facts.mutated is True
    # undeclared, the same right kernel fails the contract
    undeclared = run(make(add_into_a, add_into_a_ref, a=kl.Tensor("M N", dtype="float32")), shapes, 3)
    assert all(o.findings[0].check == Check.INPUT_CHANGED for o in undeclared)


@pytest.mark.parametrize("bad, where", [
    (lambda: kl.Spec("t", kernel=ref, reference=ref, args={"a": kl.Tensor("N", dtype="float32"), "o": kl.Out("N", like="a", mutated=True)},
                     dims={"N": kl.Dim(1, 8)}), "args['o'].mutated"),
    (lambda: make(ref, a=kl.Tensor("M N", dtype="float32", mutated="yes")), "args['a'].mutated"),
])
def test_mutated_is_a_bool_on_an_input(bad, where):
    with pytest.raises(kl.SpecError) as e:
        bad()
    assert where in str(e.value)


# ---------------------------------------------------------------- a dim that no shape uses
PAGE = 16


def _table(point, gen):
    B, L, P = point.sizes["B"], point.sizes["L"], point.sizes["P"]
    return {"table": torch.randint(0, P, (B, math.ceil(L / PAGE)), generator=gen, dtype=torch.int64)}


def paged_sum(pages, lens, table):
    """out[b] = the sum of the first lens[b] token rows of sequence b, its tokens in pages[table[b]]."""
    out = torch.empty(lens.shape[0], pages.shape[-1], dtype=pages.dtype, device=pages.device)
    for b in range(lens.shape[0]):
        out[b] = pages[table[b]].reshape(-1, pages.shape[-1])[:int(lens[b])].float().sum(0).to(pages.dtype)
    return out


def paged_sum_ref(pages, lens, table):
    return torch.stack([pages[table[b]].reshape(-1, pages.shape[-1])[:int(lens[b])].sum(0) for b in range(lens.shape[0])])


def paged_sum_scribbles(pages, lens, table):
    out = paged_sum(pages, lens, table)
    table.zero_()                  # the page table (built by build=, no kl.Tensor) is an input too
    return out


def paged(kernel=paged_sum):
    return kl.Spec("paged_sum", kernel=kernel, reference=paged_sum_ref,
                   args={"pages": kl.Tensor("P 16 D", dtype="float32"),
                         "lens": kl.Tensor("B", dtype="int32", range=(1, "L")), "table": None},
                   returns=kl.Tensor("B D", like="pages"),
                   dims={"B": kl.Dim(1, 8), "L": kl.Dim(1, 4096, tile=16), "P": kl.Dim(256, 512), "D": kl.Dim(1, 64)},
                   build=_table)


def test_a_dim_used_only_in_a_value_range_and_build_is_accepted_and_climbed():
    spec = paged()
    for gen in (shapes, values, contracts):
        pts = list(gen.points(spec, CPU_BUDGET))
        assert pts and all("L" in p.sizes for p in pts)
        assert len({p.sizes["L"] for p in pts}) >= (3 if gen is shapes else 1)
        outs = [run_point(spec, p, "cpu").outcome for p in itertools.islice(pts, 4)]
        assert all(o.status in ("passed", "skipped") for o in outs), [message(f) for o in outs for f in o.findings]
        assert any(o.status == "passed" for o in outs)
    bad = paged(paged_sum_scribbles)
    p = next(iter(shapes.points(bad, CPU_BUDGET)))
    f = run_point(bad, p, "cpu").outcome.findings[0]
    assert f.check == Check.INPUT_CHANGED and f.output == "table" and f.facts.how == "values"


def test_a_dim_used_in_rows_or_valid_only_counts_as_used_and_one_used_nowhere_does_not():
    one = lambda x: x
    base = dict(kernel=one, reference=one, args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"))
    kl.Spec("t", **{**base, "args": {"x": kl.Tensor("R N", dtype="float32")}, "returns": kl.Tensor("R N", like="x")},
            dims={"N": kl.Dim(1, 8), "R": kl.Dim(1, 4)}, rows="R")
    with pytest.raises(kl.SpecError) as e:                       # rows of no tensor: said as such, not "unused"
        kl.Spec("t", dims={"N": kl.Dim(1, 8), "R": kl.Dim(1, 4)}, rows="R", **base)
    assert "no tensor's shape uses 'R'" in str(e.value) and "nothing uses" not in str(e.value)
    kl.Spec("t", **{**base, "args": {"x": kl.Tensor("N 16", dtype="float32", valid="V")},
                    "returns": kl.Tensor("N", dtype="float32")}, dims={"N": kl.Dim(1, 8), "V": kl.Dim(1, 16)})
    with pytest.raises(kl.SpecError) as e:
        kl.Spec("t", dims={"N": kl.Dim(1, 8), "U": kl.Dim(1, 4)}, **base)
    assert "dims['U']" in str(e.value) and "nothing uses 'U'" in str(e.value)


def test_the_copies_of_a_point_share_one_budget_and_the_rest_is_hashed(monkeypatch):
    spec = kl.Spec("wide", kernel=zeroes_a, reference=ref,
                   args={"a": kl.Tensor("M N", dtype="float32"), "b": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("M N", like="a"), dims=DIMS)
    p = next(p for p in shapes.points(spec, CPU_BUDGET) if p.sizes["M"] > 4)
    from kladder.run.harness import Harness
    prep = Harness(spec, p, "cpu").prepare()
    b_bytes = p.sizes["N"] * 4 + 0
    monkeypatch.setattr(input_check, "SNAPSHOT_COPY_BYTES", b_bytes)
    shots = input_check.snapshot(spec, prep.inputs, p)
    assert [(s.name, s.how) for s in shots] == [("a", "hash"), ("b", "copy")]     # the smaller input copied
    o = run_point(spec, p, "cpu").outcome
    assert o.findings[0].output == "a" and o.findings[0].facts.how == "hash"


def test_rung_5_does_not_repeat_a_kernel_with_a_declared_mutated_input():
    """A pool's inputs are reused call after call: a right in-place kernel would differ from its
    first call at every repetition. Rung 5 skips it, naming the input, instead of failing it."""
    from kladder.gen.gaps import repetition
    from kladder.core.outcome import NoteKind
    from kladder.report.words import note_text
    outcomes = run(mutated(add_into_a), repetition, 2)
    assert outcomes and all(o.status == "skipped" and o.note.kind == NoteKind.INPUTS_MUTATED for o in outcomes)
    assert "writes a in place" in note_text(outcomes[0].note)
