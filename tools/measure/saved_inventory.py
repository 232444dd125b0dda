#!/usr/bin/env python3
"""What a training step's forward keeps for backward, tensor by tensor, eager or compiled.

For runs of tools/measure/measure.py's kind (a catalogue model with random weights, one GPU), this
records, for one forward with the loss after warm-up steps:

* every tensor autograd saves for backward, through torch.autograd.graph.saved_tensors_hooks (also
  what torch.compile's AOTAutograd functions save with ctx.save_for_backward), once per storage, as
  (dtype, shape, bytes), grouped by dtype and shape;
* the CUDA allocator's blocks that the forward left alive (torch.cuda.memory._snapshot before and
  after it, blocks by address): what the step keeps, whatever keeps it, as a histogram of sizes;
* torch.cuda.memory_allocated() before and after the forward and the peak of its backward.

It answers what the compiled graph keeps where the eager ops' list does not apply (torchao's
float8 under torch.compile keeps less than compiled bf16: data/measurements/h100-2026-11-28-fp8).

    python3 tools/measure/saved_inventory.py --out inventory.json            # the default plan
    python3 tools/measure/saved_inventory.py --smoke                         # toy sizes on the CPU

See tools/measure/README.md.
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import os
import sys
import time
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure  # noqa: E402  (the same models, builds and float8 conversion)

PLAN = [
    # llama-3.2-1b, full, bf16-mixed, 2048 x 4: the H100 float8 runs' configuration
    measure.Run("llama-3.2-1b", "full", "bf16-mixed", 2048, 4, fp8="tensorwise", compile=True),
    measure.Run("llama-3.2-1b", "full", "bf16-mixed", 2048, 4, compile=True),
    measure.Run("llama-3.2-1b", "full", "bf16-mixed", 2048, 4, fp8="tensorwise"),
    measure.Run("llama-3.2-1b", "full", "bf16-mixed", 2048, 4),
]
WARMUP = 2


def live_blocks() -> dict:
    """Address -> requested size of every allocated block of the CUDA caching allocator."""
    import torch

    out = {}
    for seg in torch.cuda.memory._snapshot()["segments"]:
        for b in seg["blocks"]:
            if b["state"] == "active_allocated":
                out[b["address"]] = b.get("requested_size", b["size"])
    return out


def inventory(run: measure.Run, device: str, tiny: bool) -> dict:
    import torch

    cuda = device.startswith("cuda")
    model, attention, _, config = measure.build_model(run, device, tiny)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
    gen = torch.Generator(device="cpu").manual_seed(measure.SEED)
    ids = torch.randint(0, config.vocab_size, (run.micro_batch, run.seq), generator=gen).to(device)

    def forward():
        with torch.autocast(device_type="cuda" if cuda else "cpu", dtype=torch.bfloat16,
                            enabled=run.precision == "bf16-mixed"):
            return model(input_ids=ids, labels=ids).loss

    t0 = time.perf_counter()
    for _ in range(WARMUP):  # compiles where compiled; optimizer states exist after the first
        forward().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    warmup_s = time.perf_counter() - t0

    saved = {}  # storage pointer -> (dtype, shape, bytes)

    def pack(t):
        try:
            key = t.untyped_storage().data_ptr()
            nbytes = t.untyped_storage().nbytes()
        except (RuntimeError, NotImplementedError):  # a tensor subclass without one storage
            key, nbytes = id(t), t.numel() * t.element_size()
        saved.setdefault(key, (str(t.dtype).replace("torch.", ""), tuple(t.shape), nbytes, type(t).__name__))
        return t

    if cuda:
        torch.cuda.synchronize()
        gc.collect()
        before = live_blocks()
        allocated_before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = forward()
    out = {"name": run.name, "attention": attention,
           "warmup_s": round(warmup_s, 1)}
    if cuda:
        torch.cuda.synchronize()
        after = live_blocks()
        out["allocated_before_forward"] = allocated_before
        out["kept_by_forward"] = torch.cuda.memory_allocated() - allocated_before
        out["forward_peak_over_start"] = torch.cuda.max_memory_allocated() - allocated_before
        sizes = collections.Counter(after[a] for a in after.keys() - before.keys())
        out["new_blocks"] = [{"bytes": s, "count": n} for s, n in sorted(sizes.items(), key=lambda kv: -kv[0] * kv[1])]
        torch.cuda.reset_peak_memory_stats()
    loss.backward()
    if cuda:
        torch.cuda.synchronize()
        out["backward_peak_over_start"] = torch.cuda.max_memory_allocated() - allocated_before
    groups = collections.defaultdict(lambda: [0, 0])
    for dtype, shape, nbytes, kind in saved.values():
        g = groups[(dtype, shape, kind)]
        g[0] += 1
        g[1] += nbytes
    out["saved"] = [{"dtype": d, "shape": list(s), "class": k, "count": n, "bytes": b}
                    for (d, s, k), (n, b) in sorted(groups.items(), key=lambda kv: -kv[1][1])]
    out["saved_bytes"] = sum(b for _, _, b, _ in saved.values())
    del model, opt, loss, ids
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    return out


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, help="where to write the inventory (JSON)")
    p.add_argument("--only", action="append", default=[], help="only the runs whose name contains TEXT")
    p.add_argument("--smoke", action="store_true", help="toy sizes on the CPU (float8 emulated): writes nothing")
    args = p.parse_args(argv)
    if not args.smoke and not args.out:
        p.error("--out is required (or --smoke)")
    import torch

    device = "cpu" if args.smoke else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        print("error: no CUDA device (use --smoke to check the code path on the CPU)", file=sys.stderr)
        return 3
    runs = [r for r in PLAN if not args.only or any(s in r.name for s in args.only)]
    if not runs:
        print(f"error: no run of the plan matches --only {args.only}", file=sys.stderr)
        return 2
    doc = {"what": "saved tensors and blocks kept by one forward (tools/measure/saved_inventory.py)",
           "versions": measure.versions(), "runs": []}
    for run in runs:
        if args.smoke and run.compile:
            continue  # Inductor on the CPU compiles for minutes; the hooks are the same
        try:
            r = inventory(run, device, args.smoke)
        except Exception as e:  # reported, the others go on
            r = {"name": run.name, "error": f"{type(e).__name__}: {e}"}
            gc.collect()
            if device == "cuda":
                torch.cuda.empty_cache()
        doc["runs"].append(r)
        print(f"{run.name}: saved {r.get('saved_bytes', 0) / 2**30:.2f} GiB, kept by forward "
              f"{r.get('kept_by_forward', 0) / 2**30:.2f} GiB" + (f" ({r['error']})" if "error" in r else ""), flush=True)
        if args.out:
            tmp = args.out.with_name(args.out.name + ".tmp")
            tmp.write_text(json.dumps(doc, indent=1) + "\n")
            os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
