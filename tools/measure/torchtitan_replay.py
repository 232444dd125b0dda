#!/usr/bin/env python3
"""Replays one rank of a torchtitan FSDP2 run on one GPU, with what is alive at its memory peak.

torchtitan's published benchmark rows report `memory/max_reserved(GiB)` of rank 0 of a run over
tens of GPUs. One rank of FSDP2 holds its shard of the model states, the all-gathered units, the
reduce-scatter inputs and its own micro-batch's activations: all of it can be allocated on one GPU
when the process group is PyTorch's fake backend (torch.testing._internal.distributed.fake_pg,
the backend torchtitan's own scripts/estimate/estimation.py uses): every collective returns at
once with its output allocated, not filled. This script builds the model, applies torchtitan's
own float8 conversion, per-op selective checkpointing, per-block torch.compile and fully_shard
(torchtitan/models/llama3/parallelize_llama.py and components/quantization/float8.py of a
checkout given with --torchtitan-src; nothing of it is in this repository), runs torchtitan's
training step (train.py: forward, the compiled loss, `del pred`, backward, the foreach gradient
clipping, fused AdamW, the float8 scale precompute) on random tokens, and records per step:

* torch.cuda.max_memory_allocated() and max_memory_reserved() (torchtitan's metrics read
  memory_stats()["reserved_bytes.all.peak"] after resetting the peaks at each log step);
* the allocator's segment count and the bytes of inactive split blocks at the end of the step;
* from torch.cuda.memory._record_memory_history over the last step, the allocations alive at its
  allocated peak, grouped by the innermost source line of torchtitan, torchao or torch.distributed
  that made them, and by CUDA stream.

Numbers only (no collective moves data): the losses are garbage and the step time has no
communication in it. Memory is what this is for.

    git -C torchtitan archive e7c0cae torchtitan | tar -x -C DIR
    python3 tools/measure/torchtitan_replay.py --torchtitan-src DIR --world 32 --world 64 \
        --out data/measurements/DIR/torchtitan-replay.json
    python3 tools/measure/torchtitan_replay.py --torchtitan-src DIR --smoke   # toy sizes on the CPU

See tools/measure/README.md.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import importlib
import importlib.machinery
import json
import os
import sys
import time
import types
from pathlib import Path

from memory_trace import alive_at_peak

# Trainy's rows (data/reference/published-fp8-cp.json): llama3_8b.toml with local_batch_size 2,
# compile, float8 with the FSDP float8 all-gather, the scale precompute and the forced recompute
# of the weight's cast in backward; the output layer left in bf16 (the TOML's filter_fqns).
ROW = {"flavor": "8B", "vocab": 128256, "local_batch": 2, "seq": 8192, "steps": 6,
       "lr": 3e-4, "eps": 1e-8, "max_norm": 1.0}


class _Anything:
    """Stands for any name of a library that is not installed: any attribute, call or base class."""

    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Anything()

    def __call__(self, *args, **kwargs):
        return _Anything()

    def __mro_entries__(self, bases):
        return ()


def placeholder(name: str) -> None:
    """An empty module that answers any attribute with a placeholder (module-level imports only)."""
    mod = types.ModuleType(name)
    mod.__path__ = []  # a package, so that submodules import too
    mod.__file__ = f"<placeholder for {name}>"
    mod.__spec__ = importlib.machinery.ModuleSpec(name, None)

    def attribute(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Anything()

    mod.__getattr__ = attribute  # type: ignore[method-assign]
    sys.modules[name] = mod


def import_torchtitan(src: Path):
    """torchtitan's model, parallelization and float8 modules, without its package __init__s.

    Those import the data loaders, tokenizers and experiments (datasets, torchdata, tiktoken, tyro,
    tensorboard): where such a library is missing, an empty placeholder stands in, as nothing of it
    runs here.
    """
    root = src / "torchtitan"
    if not (root / "models" / "llama3" / "parallelize_llama.py").is_file():
        print(f"torchtitan_replay: --torchtitan-src {src}: no torchtitan/models/llama3/parallelize_llama.py there "
              "(extract torchtitan at e7c0cae: git archive e7c0cae torchtitan | tar -x -C DIR)", file=sys.stderr)
        sys.exit(2)
    import torch  # noqa: F401 - first, so that no placeholder's import half-imports it

    for name in ("tyro", "torchdata", "torchdata.stateful_dataloader", "datasets", "datasets.distributed",
                 "tiktoken", "tiktoken.load", "blobfile", "tokenizers", "torch.utils.tensorboard", "wandb",
                 "rich", "rich.pretty"):
        try:
            importlib.import_module(name)
        except ImportError:
            placeholder(name)
    sys.path.insert(0, str(src))
    for pkg in ("torchtitan", "torchtitan.models", "torchtitan.models.llama3", "torchtitan.components",
                "torchtitan.components.quantization"):
        mod = types.ModuleType(pkg)
        mod.__path__ = [str(root.joinpath(*pkg.split(".")[1:]))]
        sys.modules[pkg] = mod
    from torchtitan.components.quantization import float8  # noqa: F401 - registers the converter
    from torchtitan.config_manager import JobConfig
    from torchtitan.distributed import ParallelDims
    from torchtitan.models.llama3 import model as llama
    from torchtitan.models.llama3 import parallelize_llama as par
    from torchtitan.protocols.model_converter import build_model_converters
    return types.SimpleNamespace(JobConfig=JobConfig, ParallelDims=ParallelDims, llama=llama, par=par,
                                 float8=float8, build_model_converters=build_model_converters)


def job_config(tt, smoke: bool):
    """llama3_8b.toml with the row's command-line overrides."""
    jc = tt.JobConfig()
    jc.model.name, jc.model.flavor = "llama3", ROW["flavor"]
    jc.model.converters = ["float8"]
    jc.training.local_batch_size = ROW["local_batch"]
    jc.training.seq_len = ROW["seq"]
    jc.training.compile = not smoke
    jc.training.max_norm = ROW["max_norm"]
    jc.activation_checkpoint.mode = "selective"
    jc.activation_checkpoint.selective_ac_option = "op"
    jc.float8.enable_fsdp_float8_all_gather = True
    jc.float8.precompute_float8_dynamic_scale_for_fsdp = True
    jc.float8.force_recompute_fp8_weight_in_bwd = True
    jc.float8.filter_fqns = ["output"]
    jc.float8.emulate = smoke
    jc.parallelism.data_parallel_shard_degree = -1
    return jc


def frame_key(frames: list) -> str:
    """The innermost frame of torchtitan, torchao, FSDP or checkpointing that made an allocation."""
    marks = ("torchinductor", "torchtitan/", "torchao/", "torch/distributed/fsdp/", "torch/utils/checkpoint",
             "torch/distributed/_composable/", "torch/optim/", "torch/nn/utils/clip_grad", "torchtitan_replay")
    for f in frames:
        name = f.get("filename", "")
        if any(m in name for m in marks):
            short = name.split("site-packages/")[-1]
            return f"{short}:{f.get('line')} {f.get('name')}"
    return "no Python frame (autograd's backward engine, compiled code or C++)"


def peak_breakdown(snapshot: dict, device: int) -> dict:
    """The allocations alive when the traced allocated total was highest, by source line and stream."""
    traces = snapshot["device_traces"][device]
    peak, peak_at, alive = alive_at_peak(traces)
    groups: dict[str, list[int]] = {}
    streams: dict[str, int] = {}
    for e in alive:
        g = groups.setdefault(frame_key(e.get("frames", [])), [0, 0])
        g[0] += e["size"]
        g[1] += 1
        streams[str(e.get("stream", 0))] = streams.get(str(e.get("stream", 0)), 0) + e["size"]
    ordered = sorted(groups.items(), key=lambda kv: -kv[1][0])
    return {"traced_peak_bytes": peak,
            "at_allocation_by": frame_key(traces[peak_at].get("frames", [])) if peak_at >= 0 else "",
            "alive_by_stream_bytes": streams,
            "alive": [{"where": k, "bytes": v[0], "tensors": v[1]} for k, v in ordered[:40]]}


def segments_summary(snapshot: dict) -> dict:
    segs = snapshot["segments"]
    inactive = sum(b["size"] for s in segs for b in s["blocks"] if b["state"] == "inactive")
    by_stream: dict[str, int] = {}
    for s in segs:
        by_stream[str(s["stream"])] = by_stream.get(str(s["stream"]), 0) + s["total_size"]
    return {"segments": len(segs), "reserved_bytes": sum(s["total_size"] for s in segs),
            "inactive_bytes": inactive, "reserved_by_stream_bytes": by_stream}


def replay(tt, world: int, smoke: bool) -> dict:
    import torch
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    cuda = not smoke
    device = "cuda" if cuda else "cpu"
    dist.init_process_group("fake", rank=0, world_size=world, store=FakeStore())
    try:
        jc = job_config(tt, smoke)
        dims = tt.ParallelDims(dp_replicate=1, dp_shard=-1, cp=1, tp=1, pp=1, world_size=world,
                               enable_loss_parallel=False)
        mesh = dims.build_mesh(device_type=device)
        args = tt.llama.TransformerModelArgs(dim=256, n_layers=2, n_heads=8, n_kv_heads=2, rope_theta=500000) \
            if smoke else llama3_8b(tt)
        args.vocab_size = 512 if smoke else ROW["vocab"]
        args.max_seq_len = 256 if smoke else ROW["seq"]
        seq = args.max_seq_len
        with torch.device("meta"):
            model = tt.llama.Transformer(args)
        tt.build_model_converters(jc, dims).convert(model)
        tt.par.parallelize_llama(model, mesh, dims, jc)
        model.to_empty(device=device)
        with torch.no_grad():
            model.init_weights(buffer_device=None)
        model.train()
        optim = torch.optim.AdamW(model.parameters(), lr=ROW["lr"], betas=(0.9, 0.95), eps=ROW["eps"],
                                  weight_decay=0.1, fused=cuda, foreach=not cuda)
        loss_fn = torch.nn.functional.cross_entropy
        def ce(pred, labels):  # torchtitan/components/loss.py cross_entropy_loss
            return loss_fn(pred.flatten(0, 1).float(), labels.flatten(0, 1))
        loss_fn_c = torch.compile(ce) if jc.training.compile else ce
        from torchtitan.distributed import utils as dist_utils
        def allocated(peak: bool = False) -> int:
            if not cuda:
                return 0
            torch.cuda.synchronize()
            return torch.cuda.max_memory_allocated() if peak else torch.cuda.memory_allocated()

        gen = torch.Generator(device="cpu").manual_seed(0)
        inputs = torch.randint(0, args.vocab_size, (ROW["local_batch"], seq), generator=gen).to(device)
        labels = torch.randint(0, args.vocab_size, (ROW["local_batch"], seq), generator=gen).to(device)
        steps, snap = [], None
        n_steps = 2 if smoke else ROW["steps"]
        for step in range(n_steps):
            last = step == n_steps - 1
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                if last:
                    torch.cuda.memory._record_memory_history(max_entries=2_000_000, stacks="python")
            t0 = time.perf_counter()
            optim.zero_grad()
            row = {"step": step + 1, "allocated_start_bytes": allocated()}
            pred = model(inputs)
            row.update({"allocated_after_forward_bytes": allocated(), "max_allocated_forward_bytes": allocated(True)})
            loss = loss_fn_c(pred, labels)
            row["allocated_after_loss_bytes"] = allocated()
            del pred  # train.py: "need to free to before bwd to avoid peaking memory"
            loss.backward()
            row["allocated_after_backward_bytes"] = allocated()
            dist_utils.clip_grad_norm_(list(model.parameters()), ROW["max_norm"], foreach=True)
            optim.step()
            tt.build_model_converters(jc, dims).post_optimizer_hook(model)
            row["loss_finite"] = bool(torch.isfinite(loss).item())
            if cuda:
                torch.cuda.synchronize()
                stats = torch.cuda.memory_stats()
                row.update({"seconds": time.perf_counter() - t0,
                            "max_allocated_bytes": stats["allocated_bytes.all.peak"],
                            "max_reserved_bytes": stats["reserved_bytes.all.peak"],
                            "allocated_end_bytes": stats["allocated_bytes.all.current"],
                            "segments": stats["segment.all.current"],
                            "inactive_split_bytes": stats["inactive_split_bytes.all.current"],
                            "alloc_retries": stats["num_alloc_retries"]})
                if last:
                    snap = torch.cuda.memory._snapshot()
                    torch.cuda.memory._record_memory_history(enabled=None)
            steps.append(row)
            print(f"world {world} step {step + 1}: {json.dumps(row)}", flush=True)
        out = {"world": world, "parameters": sum(p.numel() for p in model.parameters()),  # DTensor: global
               "float8_linears": sum(type(m).__name__ == "Float8Linear" for m in model.modules()),
               "steps": steps}
        if snap is not None:
            dev = torch.cuda.current_device()
            out["last_step_peak"] = peak_breakdown(snap, dev)
            out["last_step_segments"] = segments_summary(snap)
        del model, optim, snap
        gc.collect()
        return out
    finally:
        dist.destroy_process_group()


def llama3_8b(tt):
    """torchtitan's "8B" flavour (models/llama3/__init__.py llama3_configs), built here as there."""
    return tt.llama.TransformerModelArgs(dim=4096, n_layers=32, n_heads=32, n_kv_heads=8,
                                         ffn_dim_multiplier=1.3, multiple_of=1024, rope_theta=500000)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--torchtitan-src", type=Path, required=True, help="directory holding torchtitan/ (e7c0cae)")
    ap.add_argument("--world", type=int, action="append", help="FSDP world size to replay (repeatable; default 32)")
    ap.add_argument("--out", type=Path, help="JSON file to write")
    ap.add_argument("--smoke", action="store_true", help="toy sizes on the CPU, float8 emulated, no compile")
    a = ap.parse_args()
    worlds = a.world or [32]
    if any(w < 1 for w in worlds):
        ap.error(f"--world {min(worlds)}: a world size is a positive number of ranks")
    tt = import_torchtitan(a.torchtitan_src.resolve())
    import torch
    if not a.smoke and not torch.cuda.is_available():
        print("torchtitan_replay: no CUDA device (run with --smoke on a CPU)", file=sys.stderr)
        return 3
    os.environ.setdefault("MASTER_ADDR", "localhost")
    result = {"what": "one rank of torchtitan e7c0cae's Llama 3.1 8B float8 FSDP2 run, fake process group",
              "date": datetime.date.today().isoformat(), "torch": torch.__version__,
              "device": torch.cuda.get_device_name() if torch.cuda.is_available() and not a.smoke else "cpu",
              "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), "row": ROW, "runs": []}
    try:
        import torchao
        result["torchao"] = torchao.__version__
    except ImportError:
        pass
    for w in worlds:
        result["runs"].append(replay(tt, w, a.smoke))
        if torch.cuda.is_available() and not a.smoke:
            torch.cuda.empty_cache()
    text = json.dumps(result, indent=1) + "\n"
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = a.out.with_suffix(a.out.suffix + ".tmp")
        tmp.write_text(text)
        tmp.replace(a.out)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
