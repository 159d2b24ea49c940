"""Spec.graphs: a mode is claimed, not assumed. A kernel that cannot be captured in a CUDA graph
fails rung 4 only when the spec claims production graphs it (graphs=True); graphs=False skips a
point whose capture fails, with the capture's error; not said (None, the default) passes with a
warning carrying the capture's error, the eager call before the capture judged. A kernel that
captures and then replays wrong fails in every state.

The launcher is training-loss-like: a mean NLL over the valid tokens whose count it reads back
to the host with .item(), which no capture allows. On the CPU the graph mode is skipped (it
needs CUDA); the claim's validation and words are checked everywhere, the three states on CUDA
(the lead runs them on the H200)."""
import pytest
import torch

import kladder as kl
from kladder.core.facts import CaptureFacts, UncapturedFacts
from kladder.gen.gaps import modes as mode_points
from kladder.core.outcome import Check, Finding, Note, NoteKind
from kladder.report.words import message, note_text
from kladder.run.trial import run_point
from kladder.core.sizes import CPU_BUDGET

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA: graph capture has no CPU equivalent")
IGNORE = -1


def masked_nll(logits, target):
    """mean over tokens with target != -1 of -log_softmax(logits)[target]; the count of valid
    tokens is read back to the host (to return 0 for an empty batch, as training loops do)."""
    valid = target != IGNORE
    n = int(valid.sum().item())
    if n == 0:
        return torch.zeros((), dtype=torch.float32, device=logits.device)
    lp = torch.log_softmax(logits.float(), dim=-1)
    picked = lp.gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return -(picked * valid).sum() / n


def masked_nll_ref(logits, target):
    valid = target != IGNORE
    lp = torch.log_softmax(logits, dim=-1)
    picked = lp.gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return -(picked * valid).sum() / valid.sum().clamp(min=1)


def loss_spec(graphs, kernel=masked_nll):
    return kl.Spec("masked_nll", kernel=kernel, reference=masked_nll_ref,
                   args={"logits": kl.Tensor("T V", dtype="float32"),
                         "target": kl.Tensor("T", dtype="int64", range=(IGNORE, 7))},
                   returns=kl.Tensor("", dtype="float32"),
                   dims={"T": kl.Dim(1, 512, tile=64), "V": kl.Dim(8, 1024, tile=128)}, modes=kl.Modes(graphs=graphs))


def graph_points(spec):
    return [p for p in mode_points.points(spec, CPU_BUDGET) if p.mode == "graph"]


@pytest.mark.parametrize("given", ["yes", 1, 0.0])
def test_graphs_must_be_a_bool_or_left_out(given):
    with pytest.raises(kl.SpecError) as e:
        loss_spec(given)
    assert "Spec('masked_nll').modes.graphs" in str(e.value) and "CUDA graphs" in str(e.value)


def test_graphs_defaults_to_not_said():
    assert loss_spec(None).modes.graphs is None
    assert kl.Spec("masked_nll", kernel=masked_nll, reference=masked_nll_ref,
                   args={"logits": kl.Tensor("T V", dtype="float32"), "target": kl.Tensor("T", dtype="int64", range=(0, 7))},
                   returns=kl.Tensor("", dtype="float32"), dims={"T": kl.Dim(1, 8), "V": kl.Dim(8, 16)}).modes.graphs is None


def test_the_words_of_each_state():
    facts = {"error": "AcceleratorError", "text": "operation not permitted when stream is capturing"}
    warned = message(Finding(Check.UNCAPTURED, facts=UncapturedFacts(**facts)))
    assert "not failed" in warned and "operation not permitted" in warned and "graphs=True" in warned
    claimed = message(Finding(Check.CAPTURE, call="capture", facts=CaptureFacts(**facts, claimed=True)))
    assert "cannot be captured" in claimed and "kl.Modes(graphs=True)" in claimed
    skipped = note_text(Note.of(NoteKind.GRAPHS_NOT_CLAIMED, **facts))
    assert "graphs=False" in skipped and "never passed" in skipped and "operation not permitted" in skipped


def test_graph_points_are_skipped_on_the_cpu_in_every_state():
    for graphs in (True, False, None):
        pts = graph_points(loss_spec(graphs))
        assert pts
        o = run_point(loss_spec(graphs), pts[0], "cpu").outcome
        assert o.status == "skipped" and o.note.kind == NoteKind.MODE_NEEDS_CUDA


@needs_cuda
@pytest.mark.parametrize("graphs", [None, False, True])
def test_a_launcher_that_reads_a_count_back_is_judged_by_its_claim(graphs):
    spec = loss_spec(graphs)
    for p in graph_points(spec):
        o = run_point(spec, p, "cuda").outcome
        if graphs is None:       # the warning, with the capture's error; the eager call judged and right
            assert o.status == "passed", [message(f) for f in o.findings]
            assert [w.check for w in o.warnings] == [Check.UNCAPTURED]
            assert o.warnings[0].facts.text
        elif graphs is False:    # skipped with the capture's error, never passed
            assert o.status == "skipped" and o.note.kind == NoteKind.GRAPHS_NOT_CLAIMED
            assert o.note.facts.text
        else:                    # claimed: the failed capture is the kernel's failure
            assert o.status == "failed" and o.findings[0].check == Check.CAPTURE
            assert o.findings[0].facts.claimed is True


def masked_nll_graphable(logits, target):
    """The same loss with no host read: it captures, and its replays are right."""
    valid = target != IGNORE
    lp = torch.log_softmax(logits.float(), dim=-1)
    picked = lp.gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return -(picked * valid).sum() / valid.sum().clamp(min=1)


_FROZEN = {}


def masked_nll_frozen(logits, target):
    """Captures, and replays wrong: the count is taken once per shape on the host and kept (a
    cache a graph bakes in); a replay on new targets divides by the first call's count."""
    key = tuple(target.shape)
    if key not in _FROZEN:
        _FROZEN[key] = int((target != IGNORE).sum().item())
    valid = target != IGNORE
    lp = torch.log_softmax(logits.float(), dim=-1)
    picked = lp.gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return -(picked * valid).sum() / max(_FROZEN[key], 1)


@needs_cuda
@pytest.mark.parametrize("graphs", [None, False, True])
def test_a_kernel_that_captures_passes_in_every_state_and_one_that_replays_wrong_fails_in_every_state(graphs):
    good = loss_spec(graphs, masked_nll_graphable)
    for p in graph_points(good):
        o = run_point(good, p, "cuda").outcome
        assert o.status == "passed" and not o.warnings, [message(f) for f in o.findings + o.warnings]
    bad = loss_spec(graphs, masked_nll_frozen)
    outcomes = [run_point(bad, p, "cuda").outcome for p in graph_points(bad)]
    failed = [o for o in outcomes if o.status == "failed"]
    assert failed and all(o.findings[0].check == Check.VALUES and "replay" in o.findings[0].call for o in failed)
