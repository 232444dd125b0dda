#!/usr/bin/env python3
"""Oracle: exact reference numbers from the Hugging Face implementations, on CPU.

For every case in cases.py this builds a small random-init model from a config
written in code, runs one training step (forward with loss, backward, AdamW
step) and writes data/reference/oracle/<case>.json.

Usage:
    python3 tools/oracle/run.py                 # all cases, (re)write the files
    python3 tools/oracle/run.py --check         # recompute, compare with the files
    python3 tools/oracle/run.py --case llama    # only cases whose name contains 'llama'
    python3 tools/oracle/run.py --list
    python3 tools/oracle/run.py --explain llama-gqa-eager-s128-b2-fp32   # list the saved tensors
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OUT_DIR = ROOT / "data" / "reference" / "oracle"
SCHEMA = "trainplan.oracle/1"
SOURCE = "tools/oracle/run.py"

sys.path.insert(0, str(HERE))

# Quiet and offline: nothing is downloaded.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoConfig, AutoModelForCausalLM, T5ForConditionalGeneration  # noqa: E402

from cases import CASES, FAMILIES, Case  # noqa: E402
from measure import measure_step  # noqa: E402

try:
    import peft  # noqa: E402
except ImportError:  # LoRA cases need it
    peft = None

# Keys of config.to_dict() that say nothing about the architecture.
CONFIG_DROP = {
    "_name_or_path", "architectures", "id2label", "label2id", "output_attentions",
    "output_hidden_states", "return_dict", "problem_type", "chunk_size_feed_forward",
    "transformers_version", "dtype", "torch_dtype", "use_cache", "tokenizer_class",
    "prefix", "task_specific_params", "finetuning_task", "torchscript", "pruned_heads",
    "output_router_logits", "classifier_dropout", "summary_type", "summary_use_proj",
    "summary_activation", "summary_proj_to_labels", "summary_first_dropout",
    "sep_token_id", "is_decoder", "add_cross_attention", "cross_attention_hidden_size",
    "tie_encoder_decoder", "return_dict_in_generate", "init_device",
}


def _filter_config(d: dict) -> dict:
    out = {}
    for k, v in d.items():
        if k in CONFIG_DROP or k.startswith("_"):
            continue
        out[k] = _filter_config(v) if isinstance(v, dict) else v
    return out


def config_record(config, case: Case) -> dict:
    out = _filter_config(config.to_dict())
    if case.experts:
        out["experts_implementation"] = case.experts
    return out


def build_model(case: Case):
    spec = dict(FAMILIES[case.family])
    model_type = spec.pop("model_type")
    config = AutoConfig.for_model(model_type, **spec)
    kwargs = {"attn_implementation": case.attention}
    if case.experts:
        kwargs["experts_implementation"] = case.experts
    torch.manual_seed(0)
    if model_type == "t5":
        model = T5ForConditionalGeneration._from_config(config, **kwargs)
    else:
        model = AutoModelForCausalLM.from_config(config, **kwargs)
    got = model.config._attn_implementation
    if got != case.attention:
        raise RuntimeError(f"{case.name}: asked for attention {case.attention}, got {got}")
    if case.experts:
        got = model.config._experts_implementation
        if got != case.experts:
            raise RuntimeError(f"{case.name}: asked for experts {case.experts}, got {got}")
    model.train()
    if case.checkpointing == "full":
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    if case.lora is not None:
        if peft is None:
            raise RuntimeError("peft is needed for the LoRA cases")
        lr = case.lora_record()
        lcfg = peft.LoraConfig(
            r=lr["rank"], lora_alpha=lr["alpha"], target_modules=lr["targets"], lora_dropout=0.0,
            bias="none", task_type="SEQ_2_SEQ_LM" if model_type == "t5" else "CAUSAL_LM",
        )
        model = peft.get_peft_model(model, lcfg)
        model.train()
    if case.trainable:
        freeze_except(model, case.trainable)
    dtype = torch.float32 if case.dtype == "float32" else torch.bfloat16
    model.to(dtype)
    return model, config


# What each part of a block is called in the Hugging Face modules (the roles of trainplan's
# Role): q_proj ... down_proj, Mixtral's block_sparse_moe.gate (router) and experts' w1/w3/w2.
_ROLE_PATTERNS = {
    "q": [r"\.q_proj\."], "k": [r"\.k_proj\."], "v": [r"\.v_proj\."], "o": [r"\.o_proj\."],
    "gate": [r"\.gate_proj\.", r"\.experts\.gate_up_proj", r"\.experts\..*\.w1\."],
    "up": [r"\.up_proj\.", r"\.experts\.gate_up_proj", r"\.experts\..*\.w3\."],
    "down": [r"\.down_proj\.", r"\.experts\.down_proj", r"\.experts\..*\.w2\."],
    "router": [r"\.block_sparse_moe\.gate\.", r"\.mlp\.gate\.", r"\.router\."],
}
_GROUPS = {"attention": ["q", "k", "v", "o"], "mlp": ["gate", "up", "down", "router"]}


def freeze_except(model, spec: str) -> None:
    """requires_grad False on every parameter but those the --trainable spec names."""
    layers, roles, norms, embedding, head = set(), set(), False, False, False
    for term in spec.split(","):
        if term == "embedding":
            embedding = True
        elif term == "head":
            head = True
        elif term == "norms":
            norms = True
        elif term == "all":
            roles |= set(_ROLE_PATTERNS)
            norms = True
        elif term in _GROUPS:
            roles |= set(_GROUPS[term])
        elif term in _ROLE_PATTERNS:
            roles.add(term)
        else:
            lo, _, hi = term.partition("-")
            layers |= set(range(int(lo), int(hi or lo) + 1))
    if not roles and not norms:
        roles, norms = set(_ROLE_PATTERNS), True
    for name, p in model.named_parameters():
        keep = False
        m = re.match(r"model\.layers\.(\d+)\.", name)
        if m and int(m.group(1)) in layers:
            dotted = "." + name[m.end():]
            if norms and "norm" in name.rsplit(".", 2)[-2]:
                keep = True
            for role in roles:
                if any(re.search(pat, dotted) for pat in _ROLE_PATTERNS[role]):
                    keep = True
        if embedding and name.startswith("model.embed_tokens."):
            keep = True
        if head and name.startswith("lm_head."):
            keep = True
        p.requires_grad_(keep)


def make_inputs(case: Case, vocab: int) -> dict:
    g = torch.Generator().manual_seed(1234)
    shape = (case.micro_batch, case.seq)
    input_ids = torch.randint(0, vocab, shape, generator=g)
    labels = torch.randint(0, vocab, shape, generator=g)
    return {"input_ids": input_ids, "labels": labels}


def run_case(case: Case, detail: list | None = None) -> dict:
    model, config = build_model(case)
    inputs = make_inputs(case, config.vocab_size)
    torch.manual_seed(0)
    result = measure_step(model, inputs, detail)
    record = {
        "schema": SCHEMA,
        "case": case.name,
        "source": SOURCE,
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "peft": peft.__version__ if (peft is not None and case.lora is not None) else None,
        },
        "config": config_record(config, case),
        "training": {
            "seq": case.seq,
            "micro_batch": case.micro_batch,
            "dtype": case.dtype,
            "attention": case.attention,
            "checkpointing": case.checkpointing,
            "method": "lora" if case.lora else "full",
            "lora": case.lora_record(),
            **({"trainable": case.trainable} if case.trainable else {}),
        },
    }
    record.update(result)
    return record


def pinned_versions() -> dict:
    pins = {}
    for line in (HERE / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, ver = line.split("==", 1)
            pins[name.strip()] = ver.strip()
    return pins


def warn_if_unpinned() -> None:
    have = {"torch": torch.__version__.split("+")[0], "transformers": transformers.__version__,
            "peft": peft.__version__ if peft is not None else None}
    for name, want in pinned_versions().items():
        if have.get(name) != want:
            print(f"warning: {name} {have.get(name)} installed, requirements.txt pins {want}; "
                  "the numbers may differ from the committed ones", file=sys.stderr)


def dumps(record: dict) -> str:
    return json.dumps(record, indent=2, sort_keys=True) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", action="append", default=[], help="run only cases whose name contains this")
    ap.add_argument("--check", action="store_true", help="compare with the committed files, write nothing")
    ap.add_argument("--list", action="store_true", help="list the case names")
    ap.add_argument("--explain", metavar="CASE", help="print every saved storage of one case, write nothing")
    ap.add_argument("--out", default=str(OUT_DIR), help="output folder (default data/reference/oracle)")
    args = ap.parse_args(argv)

    names = [c.name for c in CASES]
    if len(set(names)) != len(names):
        raise SystemExit("duplicate case names")
    cases = [c for c in CASES if not args.case or any(s in c.name for s in args.case)]
    if args.list:
        for c in cases:
            print(c.name)
        return 0

    warnings.filterwarnings("ignore")
    warn_if_unpinned()
    transformers.logging.set_verbosity_error()
    torch.use_deterministic_algorithms(False)

    if args.explain:
        found = [c for c in CASES if c.name == args.explain]
        if not found:
            raise SystemExit(f"no case named {args.explain}")
        detail: list = []
        rec = run_case(found[0], detail)
        print(f"{'region':>9s}  {'bytes':>10s}  dtype     shape")
        for region, shape, dtype, nbytes in detail:
            print(f"{region!s:>9s}  {nbytes:10d}  {dtype:8s}  {list(shape)}")
        print(json.dumps(rec["saved_for_backward_bytes"], sort_keys=True))
        return 0

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    t_all = time.time()
    failed = []
    for case in cases:
        t0 = time.time()
        text = dumps(run_case(case))
        path = out_dir / f"{case.name}.json"
        if args.check:
            old = path.read_text() if path.exists() else None
            status = "same" if old == text else ("MISSING" if old is None else "DIFFERS")
            if status != "same":
                failed.append(case.name)
        else:
            path.write_text(text)
            status = "written"
        print(f"{case.name:55s} {status:8s} {time.time() - t0:6.1f} s", flush=True)
    print(f"{len(cases)} cases in {time.time() - t_all:.1f} s")
    if failed:
        print("differ: " + ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
