"""model/train.py: the learning-rate schedule, the loss on the answer digits only (the '='
position predicts the first), exact match over batches, the command line as typed, and a
training run of a few steps writing its weights and its record."""
import json
import math

import pytest
import torch

from kladder.model import net, task, train


def test_lr_warms_up_linearly_then_decays_along_a_cosine_to_zero():
    assert train.lr_at(0, 100, 1.0, 10) == pytest.approx(0.1)
    assert train.lr_at(9, 100, 1.0, 10) == pytest.approx(1.0)
    assert train.lr_at(10, 100, 1.0, 10) == pytest.approx(1.0)
    assert train.lr_at(55, 100, 1.0, 10) == pytest.approx(0.5)
    assert train.lr_at(100, 100, 1.0, 10) == pytest.approx(0.0, abs=1e-12)
    assert train.lr_at(5, 5, 2.0, 5) == pytest.approx(2.0)                   # no decay steps: no division by zero
    lrs = [train.lr_at(s, 100, 1.0, 10) for s in range(10, 100)]
    assert all(a >= b for a, b in zip(lrs, lrs[1:], strict=False))


def test_argv_text_names_only_the_options_that_differ_and_hides_the_out_dir():
    ap = train.build_parser()
    assert train.argv_text(ap.parse_args(["--out", "/tmp/x"])) == ["--out", "DIR"]
    got = train.argv_text(ap.parse_args(["--out", "/tmp/x", "--steps", "3", "--d-model", "16"]))
    assert got == ["--steps 3", "--d-model 16", "--out", "DIR"]


def test_the_parser_requires_out():
    with pytest.raises(SystemExit):
        train.build_parser().parse_args([])


class Oracle:
    """A model that knows the whole problem: its logits at position i point at token i + shift of
    prompt + answer (shift=1: a perfect next-token predictor)."""

    def __init__(self, probs, shift):
        self.full, self.shift = torch.cat([probs.prompt, probs.answer], 1), shift

    def forward(self, seq):
        n = seq.shape[1]
        assert torch.equal(seq, self.full[:, :n])                   # fed the prompt and all but the last answer digit
        return torch.nn.functional.one_hot(self.full[:, self.shift:self.shift + n], task.VOCAB).float() * 50.0


def test_batch_loss_scores_the_answer_digits_from_the_equals_sign_on():
    probs = task.encode(torch.tensor([12, 345]), torch.tensor([99, 1]), 3)
    assert float(train.batch_loss(Oracle(probs, 1), probs)) < 1e-6
    assert float(train.batch_loss(Oracle(probs, 0), probs)) > 10    # off by one position: every answer digit wrong


class Answers:
    """generate() returns the right answers except for the rows listed in `wrong`; records batch sizes."""

    def __init__(self, probs, wrong=()):
        self.probs, self.wrong, self.batches, self.at = probs, set(wrong), [], 0

    def generate(self, prompt, n_new):
        rows = range(self.at, self.at + prompt.shape[0])
        self.at += prompt.shape[0]
        self.batches.append(prompt.shape[0])
        got = self.probs.answer[list(rows)].clone()
        for i, r in enumerate(rows):
            if r in self.wrong:
                got[i, 0] = (got[i, 0] + 1) % 10
        assert n_new == got.shape[1]
        return got, None


def test_exact_match_counts_whole_answers_over_batches():
    probs = task.sample(7, 2, torch.Generator().manual_seed(0), "train")
    m = Answers(probs, wrong={0, 6})
    assert train.exact_match(m, probs, batch=3) == pytest.approx(5 / 7)
    assert m.batches == [3, 3, 1]


class PlainSGD:
    """AdamW's face without torch.optim (whose first use imports torch._dynamo: 10 s here): the
    loop's groups, learning rates and steps, by hand."""

    made: list = []

    def __init__(self, groups, lr, betas):
        self.param_groups = [dict(g, lr=lr) for g in groups]
        self.lrs = []
        PlainSGD.made.append(self)

    def zero_grad(self, set_to_none=True):
        for g in self.param_groups:
            for p in g["params"]:
                p.grad = None

    @torch.no_grad()
    def step(self):
        self.lrs.append(self.param_groups[0]["lr"])
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    p -= g["lr"] * p.grad


def test_a_few_steps_write_the_weights_and_an_honest_record(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(train.torch.optim, "AdamW", PlainSGD)
    PlainSGD.made.clear()
    args = train.build_parser().parse_args(["--out", str(tmp_path), "--steps", "3", "--digits", "1", "--layers", "1",
                                            "--d-model", "16", "--d-ff", "16", "--head-dim", "2", "--batch", "8",
                                            "--warmup", "1", "--eval-n", "8"])
    threads = torch.get_num_threads()
    with torch.random.fork_rng():
        try:
            record = train.train(args)
        finally:
            torch.set_num_threads(threads)
    written = json.loads((tmp_path / train.RECORD).read_text())
    assert written == json.loads(json.dumps(record, allow_nan=False))
    assert record["steps"] == 3 and [e["step"] for e in record["loss_log"]] == [0, 2]
    assert all(math.isfinite(e["loss"]) for e in record["loss_log"])
    assert 0.0 <= record["held_out_exact_match"] <= 1.0 and record["held_out_seed"] == 1
    assert record["command"] == ("python -m kladder.model.train --steps 3 --batch 8 --warmup 1 --digits 1 --layers 1 "
                                 "--d-model 16 --d-ff 16 --head-dim 2 --eval-n 8 --out DIR")
    cfg, params = net.load_model(str(tmp_path / train.WEIGHTS))
    assert cfg.max_len == 5 and cfg.d_model == 16 and cfg.n_layers == 1
    assert record["parameters"] == sum(v.numel() for v in params.values())
    assert '"step": 0' in capsys.readouterr().out
    (opt,) = PlainSGD.made
    assert opt.lrs == [train.lr_at(s, 3, 3e-3, 1) for s in range(3)]
    decay, rest = opt.param_groups
    assert decay["weight_decay"] == 0.01 and all(p.dim() == 2 for p in decay["params"])
    assert rest["weight_decay"] == 0.0 and all(p.dim() != 2 for p in rest["params"])
