"""Train the rung-8 model: `python -m kladder.model.train --out DIR`.

Fixed seed, one CPU thread (the machine's other cores run other work), AdamW with a short
warm-up and a cosine decay, cross-entropy on the answer digits only. Writes DIR/adder.safetensors
and DIR/adder.json (the training record: seed, steps, device, wall time, the final held-out
exact match through the generation path the scores use).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from dataclasses import asdict

import torch

from . import task
from .net import Config, Model, init_params, save_model
from .slots import resolve

WEIGHTS, RECORD = "adder.safetensors", "adder.json"


def batch_loss(model: Model, probs: task.Problems) -> torch.Tensor:
    P = probs.prompt.shape[1]
    seq = torch.cat([probs.prompt, probs.answer[:, :-1]], 1)
    logits = model.forward(seq)[:, P - 1:]                         # the '=' position predicts digit 0
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), probs.answer.reshape(-1))


def exact_match(model: Model, probs: task.Problems, batch: int = 512) -> float:
    hits = 0
    for i in range(0, probs.prompt.shape[0], batch):
        got, _ = model.generate(probs.prompt[i:i + batch], probs.answer.shape[1])
        hits += int((got == probs.answer[i:i + batch]).all(1).sum())
    return hits / probs.prompt.shape[0]


def lr_at(step: int, steps: int, peak: float, warmup: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    return peak * 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))


def train(args) -> dict:
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    cfg = Config(max_len=3 * args.digits + 2, d_model=args.d_model, n_layers=args.layers, d_ff=args.d_ff,
                 head_dim=args.head_dim)
    params = {k: v.requires_grad_() for k, v in init_params(cfg, gen).items()}
    model = Model(cfg, params, resolve(None))
    decay = [v for k, v in params.items() if v.dim() == 2]
    rest = [v for k, v in params.items() if v.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": rest, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.98))
    t0, log = time.perf_counter(), []
    for step in range(args.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args.steps, args.lr, args.warmup)
        loss = batch_loss(model, task.sample(args.batch, args.digits, gen, "train"))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(params.values()), 1.0)
        opt.step()
        if step % 100 == 0 or step == args.steps - 1:
            log.append({"step": step, "loss": round(loss.item(), 5), "seconds": round(time.perf_counter() - t0, 1)})
            print(json.dumps(log[-1]), flush=True)
    wall = time.perf_counter() - t0
    final = {k: v.detach() for k, v in params.items()}
    model = Model(cfg, final, resolve(None))
    held = task.sample(args.eval_n, args.digits, torch.Generator().manual_seed(args.seed + 1), "held_out")
    score = exact_match(model, held)
    os.makedirs(args.out, exist_ok=True)
    save_model(cfg, final, os.path.join(args.out, WEIGHTS))
    record = {
        "task": f"{args.digits}-digit addition, digits least significant first (kladder.model.task)",
        "command": "python -m kladder.model.train " + " ".join(argv_text(args)),
        "seed": args.seed, "steps": args.steps, "batch": args.batch, "lr": args.lr, "warmup": args.warmup,
        "device": "cpu", "threads": args.threads, "wall_seconds": round(wall, 1),
        "held_out_exact_match": score, "held_out_n": args.eval_n, "held_out_seed": args.seed + 1,
        "config": asdict(cfg), "parameters": sum(v.numel() for v in final.values()),
        "torch": torch.__version__, "python": platform.python_version(), "machine": platform.machine(),
        "loss_log": log,
    }
    with open(os.path.join(args.out, RECORD), "w") as f:
        json.dump(record, f, indent=1)
    return record


def argv_text(args) -> list[str]:
    """The options that differ from the defaults, as they would be typed (--out last)."""
    defaults = vars(build_parser().parse_args(["--out", "x"]))
    opts = [f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if k != "out" and v != defaults[k]]
    return opts + ["--out", "DIR"]


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m kladder.model.train", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="directory for adder.safetensors and adder.json")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--digits", type=int, default=5)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--d-model", dest="d_model", type=int, default=128)
    ap.add_argument("--d-ff", dest="d_ff", type=int, default=256)
    ap.add_argument("--head-dim", dest="head_dim", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--eval-n", dest="eval_n", type=int, default=2000)
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    rec = train(args)
    print(f"held-out exact match {rec['held_out_exact_match']:.4f} on {rec['held_out_n']} problems, "
          f"{rec['steps']} steps, {rec['wall_seconds']} s; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
