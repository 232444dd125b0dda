"""Parameter counts of catalogue models from the Hugging Face implementations themselves.

Builds each catalogue model (data/models/*.json, its "config") with transformers on the meta device
(no memory, no download) and counts its unique parameters, and for Mixture-of-Experts models the
parameters of the routed experts, so that active parameters follow. Writes
tests/model/data/hf_parameters.json, which the C++ tests compare with the model layer's counts.

    python3 tools/oracle/parameters.py            # rewrite the file
    python3 tools/oracle/parameters.py --check    # compare, write nothing, exit 1 on a difference
    python3 tools/oracle/parameters.py --family qwen3 --family gemma2   # only these model_types
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "data" / "models"
OUT = ROOT / "tests" / "model" / "data" / "hf_parameters.json"

# Families whose counts are recorded here (the ones added after the first catalogue; the older ones
# cite their safetensors metadata in the catalogue files).
FAMILIES = ("qwen3", "qwen3_moe", "olmo2", "phi3", "gemma2", "gemma3_text", "gpt_oss", "llama4_text",
            "deepseek_v2", "deepseek_v3")
# Module attribute holding the routed experts of each MoE family.
EXPERT_MODULES = ("experts",)


def count(config: dict) -> dict:
    cfg = dict(config)
    model_type = cfg.pop("model_type")
    hf_config = AutoConfig.for_model(model_type, **cfg)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(hf_config)
    seen: set[int] = set()
    total = 0
    experts = 0
    for name, p in model.named_parameters(remove_duplicate=True):
        if id(p) in seen:
            continue
        seen.add(id(p))
        total += p.numel()
        if any(f".{m}." in f".{name}" for m in EXPERT_MODULES) and ".shared_expert" not in name:
            experts += p.numel()
    out = {"total": total, "model_class": type(model).__name__}
    if experts:
        out["routed_experts"] = experts
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--family", action="append", default=[])
    args = ap.parse_args()
    families = tuple(args.family) or FAMILIES
    rows = {}
    for path in sorted(MODELS.glob("*.json")):
        entry = json.loads(path.read_text())
        config = entry.get("config")
        if not isinstance(config, dict) or config.get("model_type") not in families:
            continue
        rows[entry["name"]] = count(config)
        print(f"{entry['name']:24} {rows[entry['name']]['total']:>16,}", file=sys.stderr)
    doc = {
        "source": "transformers AutoModelForCausalLM.from_config on the meta device, each catalogue "
                  "entry's config (tools/oracle/parameters.py); unique parameters (tied weights once); "
                  "routed_experts: the parameters under each layer's 'experts' module",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
        "models": rows,
    }
    text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    if args.check:
        old = OUT.read_text() if OUT.exists() else ""
        if old != text:
            print(f"{OUT} differs from a fresh count", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
