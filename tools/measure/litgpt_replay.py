#!/usr/bin/env python3
"""Replays litgpt's published LoRA memory rows on one GPU, with the tensors alive at the peak.

The rows of data/reference/litgpt-lora-a100-40gb.json were measured by lit-gpt at commit 8641822
(Lightning-AI/litgpt, October 2023) with finetune/lora.py. This script runs the training step of
that script with lit-gpt's own model code (lit_gpt/model.py, lora.py, config.py, utils.py of a
checkout you give with --litgpt-src; nothing of it is in this repository) on random weights and
random tokens of each row's length, and records:

* torch.cuda.max_memory_allocated() over the first micro-batch (lora.py runs the longest sample
  first, so this is the peak its published rows report) and over the first two (the second
  repeats the length; the loop's `logits` local holds the first one's logits until the second
  forward returns);
* from torch.cuda.memory._record_memory_history, the allocations alive at each peak, grouped by
  the innermost lit_gpt source line that made them ("no Python frame" where autograd's engine
  made them), so that a prediction can be compared term by term.

With --reference it also writes the first micro-batch's peaks as a `trainplan.reference/1` file
(each row's model and training as in the published file, on the GPU it ran on).

Lightning Fabric is not needed: its precision plugins are reproduced as they act on a module
(lightning/fabric/plugins/precision/half.py HalfPrecision and amp.py MixedPrecision, wrapped around
the module by wrappers.py _FabricModule.forward): under bf16-true the model is built and run with
bfloat16 as the default dtype; under bf16-mixed it is built in fp32 and run under
torch.autocast("cuda", bfloat16); both return the model's floating outputs converted to the
default dtype (fp32). lit_gpt/utils.py imports lightning at module level for helpers this replay
does not call: where lightning is not installed, empty placeholder modules stand in for it.

    git -C litgpt checkout 8641822     # or: git archive 8641822 | tar -x -C DIR
    python3 tools/measure/litgpt_replay.py --litgpt-src litgpt --out data/measurements/DIR/litgpt.json \
        --reference data/reference/replay-h200-litgpt-0.1.0.json
    python3 tools/measure/litgpt_replay.py --litgpt-src litgpt --smoke    # toy sizes on the CPU

See tools/measure/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import json
import linecache
import os
import statistics
import sys
import time
import types
from pathlib import Path
from typing import Optional

from memory_trace import alive_at_peak

REPO = Path(__file__).resolve().parents[2]
ROWS = REPO / "data" / "reference" / "litgpt-lora-a100-40gb.json"

# The catalogue's names of the rows' models, as lit-gpt 8641822's Config.from_name knows them.
LITGPT_NAMES = {
    "phi-1.5": "phi-1_5",
    "stablelm-base-alpha-3b": "stablelm-base-alpha-3b",
    "llama-2-7b": "Llama-2-7b-hf",
    "llama-2-13b": "Llama-2-13b-hf",
}
LM_HEAD_CHUNK = 128  # finetune/lora.py: model(input_ids, lm_head_chunk_size=128)
TIMED_STEPS = 3


class _Placeholder(types.ModuleType):
    """A module whose every attribute is an empty class (for annotations such as L.Fabric)."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return type(name, (), {})


def _placeholder_modules(root: str, names: list[str]) -> None:
    for name in [root] + [f"{root}.{n}" for n in names]:
        sys.modules.setdefault(name, _Placeholder(name))


def import_litgpt(src: Path):
    """lit_gpt's LoRA model and loss from a checkout, with lightning stood in for where absent."""
    try:
        import lightning  # noqa: F401
    except ImportError:
        _placeholder_modules("lightning", ["fabric", "fabric.strategies", "fabric.utilities",
                                           "fabric.utilities.load", "fabric.plugins",
                                           "fabric.plugins.precision", "fabric.plugins.precision.utils"])
    try:
        import lightning_utilities.core.imports  # noqa: F401
    except ImportError:
        class RequirementCache:  # what lit_gpt/model.py asks of it: truthiness (flash-attn absent)
            def __init__(self, *args, **kwargs):
                pass

            def __bool__(self):
                return False

        _placeholder_modules("lightning_utilities", ["core", "core.imports"])
        sys.modules["lightning_utilities.core.imports"].RequirementCache = RequirementCache
    if not (src / "lit_gpt" / "lora.py").is_file():
        raise SystemExit(f"--litgpt-src {src}: no lit_gpt/lora.py there (a lit-gpt checkout at 8641822 is expected)")
    # lit_gpt/__init__.py only re-exports and refuses to import without lightning 2.1: the package
    # is registered without running it.
    package = types.ModuleType("lit_gpt")
    package.__path__ = [str(src / "lit_gpt")]
    sys.modules["lit_gpt"] = package
    import lit_gpt.model as model  # first, as __init__ does (config.py and model.py import each other)
    import lit_gpt.lora as lora
    import lit_gpt.utils as utils

    # The rows ran torch's SDPA (flash kernel): never flash_attn's package, even where installed.
    model.FlashAttention2Available = False
    return lora, utils


@contextlib.contextmanager
def default_dtype(dtype):
    """lightning/fabric/utilities/init.py _DtypeContextManager."""
    import torch

    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


class FabricPrecision:
    """Fabric's bf16-true (HalfPrecision) and bf16-mixed (MixedPrecision) around a module."""

    def __init__(self, precision: str, device: str):
        import torch

        if precision not in ("bf16-true", "bf16-mixed"):
            raise SystemExit(f"precision {precision!r}: this replay knows bf16-true and bf16-mixed")
        self.true = precision == "bf16-true"
        self.device = device
        self.torch = torch

    def init(self):
        """fabric.init_module(): the device, and under bf16-true the default dtype."""
        stack = contextlib.ExitStack()
        stack.enter_context(self.torch.device(self.device))
        if self.true:
            stack.enter_context(default_dtype(self.torch.bfloat16))
        return stack

    def forward(self, module, *args, **kwargs):
        """_FabricModule.forward: forward_context, then convert_output to the default dtype."""
        torch = self.torch
        ctx = default_dtype(torch.bfloat16) if self.true else torch.autocast(self.device, dtype=torch.bfloat16)
        with ctx:
            out = module(*args, **kwargs)
        dst = torch.get_default_dtype()
        convert = lambda t: t.to(dst) if torch.is_floating_point(t) else t  # noqa: E731
        return [convert(t) for t in out] if isinstance(out, list) else convert(out)


def rows(only: list[str]) -> list[dict]:
    cases = json.loads(ROWS.read_text())["cases"]
    out = []
    for c in cases:
        tr = c["training"]
        if tr.get("quant") or c["model"] not in LITGPT_NAMES:
            continue  # the 4-bit rows need bitsandbytes 0.41.1 and Fabric's BitsandbytesPrecision
        if only and not any(s in c["name"] for s in only):
            continue
        out.append(c)
    return out


def frame_key(frames: list[dict], driver: str) -> str:
    """The innermost lit_gpt source line of an allocation (its text), else the driver's line."""
    for f in frames:
        name = f.get("filename", "")
        if "lit_gpt" in name:
            text = linecache.getline(name, f.get("line", 0)).strip()
            return f"lit_gpt/{Path(name).name}:{f.get('line')} {f.get('name')}: {text}"
    for f in frames:
        if f.get("filename", "") == driver:
            text = linecache.getline(driver, f.get("line", 0)).strip()
            return f"replay:{f.get('line')} {text}"
    return "no Python frame (autograd's backward engine, or C++)"


def peak_breakdown(snapshot: dict, device: int) -> dict:
    """The allocations alive when the allocated total was highest, grouped by source line."""
    traces = snapshot["device_traces"][device]
    peak, peak_at, alive = alive_at_peak(traces)
    driver = str(Path(__file__).resolve())
    groups: dict[str, list[int]] = {}
    for e in alive:
        g = groups.setdefault(frame_key(e.get("frames", []), driver), [0, 0])
        g[0] += e["size"]
        g[1] += 1
    ordered = sorted(groups.items(), key=lambda kv: -kv[1][0])
    return {
        "traced_peak_bytes": peak,
        "at_allocation_by": frame_key(traces[peak_at].get("frames", []), driver) if peak_at >= 0 else "",
        "alive": [{"where": k, "bytes": v[0], "tensors": v[1]} for k, v in ordered],
    }


def toy_config(lora, name: str):
    return lora.Config.from_name(name, n_layer=2, n_embd=128, n_head=4, n_query_groups=4, intermediate_size=256,
                                 padded_vocab_size=512, vocab_size=512, r=8, alpha=16, dropout=0.05,
                                 to_query=True, to_value=True)


def replay(case: dict, lora, utils, device: str, smoke: bool) -> dict:
    import torch

    tr = case["training"]
    name = LITGPT_NAMES[case["model"]]
    mb, seq = tr["micro_batch"], tr["seq"]
    if smoke:
        seq = min(seq, 300)
    cfg = toy_config(lora, name) if smoke else lora.Config.from_name(
        name, r=tr["lora"]["rank"], alpha=tr["lora"]["alpha"], dropout=tr["lora"]["dropout"],
        to_query="q" in tr["lora"]["targets"], to_key="k" in tr["lora"]["targets"],
        to_value="v" in tr["lora"]["targets"], to_projection=False, to_mlp=False, to_head=False)
    fabric = FabricPrecision(tr["precision"], device)
    cuda = device == "cuda"
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.memory._record_memory_history(max_entries=4_000_000, stacks="python")
    torch.manual_seed(1337)
    with fabric.init():
        model = lora.GPT(cfg)
    lora.mark_only_lora_as_trainable(model)
    model.max_seq_length = seq  # train(): model.max_seq_length = longest_seq_length
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=3e-4, weight_decay=0.01)
    accum = tr.get("grad_accum", 1)
    gen = torch.Generator(device="cpu").manual_seed(0)
    input_ids = torch.randint(0, cfg.vocab_size, (mb, seq), generator=gen).to(device)
    targets = torch.randint(0, cfg.vocab_size, (mb, seq), generator=gen).to(device)
    built = torch.cuda.memory_allocated() if cuda else 0

    # finetune/lora.py train(), one iteration per micro-batch: `logits` is reassigned as each
    # forward returns (the previous micro-batch's logits alive through that forward, not after),
    # the last chunk trimmed, the chunked loss, backward; the optimizer steps once per accumulation.
    logits = loss = None
    peaks, snaps = [], []
    for _ in range(2):
        logits = fabric.forward(model, input_ids, lm_head_chunk_size=LM_HEAD_CHUNK)
        logits[-1] = logits[-1][..., :-1, :]
        loss = utils.chunked_cross_entropy(logits, targets[..., 1:])
        (loss / accum).backward()
        if cuda:
            peaks.append(torch.cuda.max_memory_allocated())
            snaps.append(torch.cuda.memory._snapshot())
    optimizer.step()
    optimizer.zero_grad()
    result = {"name": case["name"], "litgpt_config": name, "precision": tr["precision"], "micro_batch": mb,
              "seq": seq, "parameters": sum(p.numel() for p in model.parameters()),
              "trainable": sum(p.numel() for p in trainable), "loss": loss.item()}
    if cuda:
        torch.cuda.memory._record_memory_history(enabled=None)
        device_index = torch.cuda.current_device()
        result.update({"allocated_after_build_bytes": built, "peak_first_micro_batch_bytes": peaks[0],
                       "peak_two_micro_batches_bytes": peaks[1],
                       "reserved_bytes": torch.cuda.max_memory_reserved(),
                       "peak_first_micro_batch": peak_breakdown(snaps[0], device_index),
                       "peak_two_micro_batches": peak_breakdown(snaps[1], device_index)})
        del snaps
    times = []
    for _ in range(TIMED_STEPS):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        logits = fabric.forward(model, input_ids, lm_head_chunk_size=LM_HEAD_CHUNK)
        logits[-1] = logits[-1][..., :-1, :]
        loss = utils.chunked_cross_entropy(logits, targets[..., 1:])
        (loss / accum).backward()
        optimizer.step()
        optimizer.zero_grad()
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    result["micro_batch_step_s"] = statistics.median(times)
    del model, optimizer, logits, loss, trainable
    gc.collect()
    return result


def reference_case(case: dict, run: dict, gpu: str, doc: dict) -> dict:
    v = doc["versions"]
    return {
        "name": case["name"].replace("litgpt-", "replay-litgpt-", 1),
        "source": {"document": f"tools/measure/litgpt_replay.py on 1x {v['device']} (torch {v['torch']}, "
                               f"CUDA {v['cuda']}), lit-gpt 8641822's lit_gpt/ model and LoRA code",
                   "table": f"run of {doc['date']}",
                   "row": f"{case['name']}: first micro-batch"},
        "note": ("the training step of lit-gpt 8641822 finetune/lora.py replayed with its own model code on "
                 "random weights and random tokens of the published row's length (Fabric's bf16-true / "
                 "bf16-mixed reproduced: tools/measure/README.md); the first micro-batch's peak, as the "
                 f"published row's ({case['source']['row']}, on an A100-40GB)"),
        "model": case["model"],
        "hardware": {"gpu": gpu, "count": 1},
        "training": case["training"],
        "measured": [{"metric": "peak_allocated", "value": round(run["peak_first_micro_batch_bytes"] / 1e9, 3),
                      "unit": "GB",
                      "what": "torch.cuda.max_memory_allocated() / 1e9 after the first micro-batch's backward "
                              "(peak statistics from before the model was built)",
                      "tolerance_pct": 7}],
    }


def write_reference(path: Path, doc: dict, cases: dict, gpu: str) -> None:
    published = json.loads(ROWS.read_text())
    runs = [r for r in doc["runs"] if "error" not in r]
    out = {"schema": "trainplan.reference/1",
           "description": "lit-gpt 8641822's LoRA step replayed on one GPU by tools/measure/litgpt_replay.py: "
                          "the peak of the first micro-batch of each published row of "
                          f"{ROWS.relative_to(REPO)} that needs no bitsandbytes.",
           "models": published["models"],
           "cases": [reference_case(cases[r["name"]], r, gpu, doc) for r in runs]}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def versions() -> dict:
    import torch

    v = {"torch": torch.__version__, "cuda": torch.version.cuda or ""}
    if torch.cuda.is_available():
        v["device"] = torch.cuda.get_device_name()
    return v


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--litgpt-src", type=Path, required=True, help="a lit-gpt checkout at commit 8641822")
    p.add_argument("--out", type=Path, help="where to write the measurements (JSON)")
    p.add_argument("--reference", type=Path, help="also write the first micro-batch's peaks as a reference file")
    p.add_argument("--gpu", default="H200", help="the catalogue GPU the reference file names (default H200)")
    p.add_argument("--only", action="append", default=[], help="only the rows whose name contains TEXT")
    p.add_argument("--smoke", action="store_true", help="toy sizes on the CPU: checks the code path, writes nothing")
    args = p.parse_args(argv)
    if not args.smoke and not args.out:
        p.error("--out is required (or --smoke)")
    lora, utils = import_litgpt(args.litgpt_src.resolve())
    import torch

    device = "cpu" if args.smoke else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        print("error: no CUDA device (use --smoke to check the code path on the CPU)", file=sys.stderr)
        return 3
    selected = rows(args.only)
    if not selected:
        print(f"error: no row of {ROWS.relative_to(REPO)} matches --only {args.only}", file=sys.stderr)
        return 2
    doc = {"what": "lit-gpt 8641822 finetune/lora.py training step replayed (tools/measure/litgpt_replay.py)",
           "rows": str(ROWS.relative_to(REPO)), "versions": versions(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "runs": []}
    for case in selected:
        t0 = time.perf_counter()
        try:
            r = replay(case, lora, utils, device, args.smoke)
        except torch.cuda.OutOfMemoryError as e:  # reported, the others go on
            r = {"name": case["name"], "error": f"out of memory: {e}"}
            gc.collect()
            torch.cuda.empty_cache()
        r["wall_s"] = round(time.perf_counter() - t0, 1)
        doc["runs"].append(r)
        gb = r.get("peak_two_micro_batches_bytes", 0) / 1e9
        print(f"{case['name']}: peak {gb:.2f} GB, first micro-batch "
              f"{r.get('peak_first_micro_batch_bytes', 0) / 1e9:.2f} GB, {r['wall_s']} s"
              + (f" ({r['error']})" if "error" in r else ""), flush=True)
        if args.out:
            tmp = args.out.with_name(args.out.name + ".tmp")
            tmp.write_text(json.dumps(doc, indent=1) + "\n")
            os.replace(tmp, args.out)
        if args.reference and not args.smoke:
            write_reference(args.reference, doc, {c["name"]: c for c in selected}, args.gpu)
    return 0


if __name__ == "__main__":
    sys.exit(main())
