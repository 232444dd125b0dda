#!/usr/bin/env python3
"""Real training steps on one GPU, written as trainplan reference cases.

Builds Hugging Face models from the configs in data/models/ with random weights (nothing is
downloaded), runs a few training steps of each planned configuration (full fine-tuning, LoRA, QLoRA
where bitsandbytes is present; bf16-mixed and bf16-true; AdamW; activation checkpointing on and off),
and records torch.cuda.max_memory_allocated, max_memory_reserved, the device's used memory and the
median step time. The output is a `trainplan.reference/1` file that `trainplan validate` reads.

    python3 tools/measure/measure.py --dry-run          # the plan, no CUDA needed
    python3 tools/measure/measure.py --out data/reference/measured-h100.json

See tools/measure/README.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import gc
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[2]
MODELS_DIR = REPO / "data" / "models"
GPUS_DIR = REPO / "data" / "gpus"

WARMUP_STEPS = 2
TIMED_STEPS = 5
SEED = 0
LIGER_APPLIED = False  # Liger patched transformers' modules in this process (they stay patched)
ROUTING = "balanced"  # --routing: balanced (noise at the routers' input) | model (as the random model routes)

# Pass bands written next to each value. peak_allocated uses the band the litgpt runs are held to;
# the others are provisional until the models of the allocator cache and of time are calibrated.
TOLERANCE_PCT = {
    "peak_allocated": 15,
    "reserved": 20,
    "device_total": 25,
    "step_time": 25,
    "tokens_per_s": 25,
}

# LoRA targets by model_type: the q and v projections under their Hugging Face module names.
SEPARATE_QV = ("llama", "mistral", "mixtral", "qwen2", "gemma", "phi", "qwen3", "qwen3_moe", "olmo2", "gemma2",
               "gemma3_text", "gpt_oss", "llama4_text")
QV_TARGETS = {
    **{model_type: ["q_proj", "v_proj"] for model_type in SEPARATE_QV},
    "falcon": ["query_key_value"],
    "bloom": ["query_key_value"],
    "gpt_neox": ["query_key_value"],
    "gpt2": ["c_attn"],
    "mpt": ["Wqkv"],
    "phi3": ["qkv_proj"],  # fused: q, k and v are one linear layer
}


@dataclasses.dataclass(frozen=True)
class Run:
    model: str  # catalogue name: data/models/<model>.json
    method: str  # full | lora | qlora
    precision: str  # bf16-mixed | bf16-true
    seq: int
    micro_batch: int
    checkpointing: str = "none"  # none | full
    lora_rank: int = 16
    lora_alpha: int = 32
    lora_targets: str = "qv"  # qv | all-linear
    quant: Optional[str] = None  # nf4 | nf4-dq (qlora only)
    experts: Optional[str] = None  # MoE: transformers' experts_implementation (None: its default, grouped_mm)
    fp8: Optional[str] = None  # torchao float8 training recipe: tensorwise | rowwise (None: 16-bit GEMMs)
    compile: bool = False  # torch.compile the model (torchao's float8 casts fuse into its kernels)
    liger: bool = False  # Liger's kernels as the Trainer's use_liger_kernel applies them (_apply_liger_kernel_to_instance)
    liger_only: Optional[str] = None  # one of Liger's kernels alone (rope | rms_norm | swiglu | fused_linear_cross_entropy)

    @property
    def name(self) -> str:
        parts = [self.model, self.method]
        if self.quant:
            parts.append(self.quant)
        if self.method != "full":
            parts.append(f"r{self.lora_rank}{'qv' if self.lora_targets == 'qv' else 'all'}")
        parts += [self.precision, f"s{self.seq}", f"b{self.micro_batch}"]
        if self.checkpointing == "full":
            parts.append("ckpt")
        if self.experts:
            parts.append(f"experts-{self.experts}")
        if self.fp8:
            parts.append(f"fp8-{self.fp8}")
        if self.compile:
            parts.append("compile")
        if self.liger:
            parts.append("liger" + (f"-only-{self.liger_only.replace('_', '-')}" if self.liger_only else ""))
        return "-".join(parts)


# The plan: 0.1B to 8B models, every method and precision, checkpointing on and off, sequence 512
# to 4096, micro-batch 1 to 8. Ordered small to large so that a budget cut drops the largest runs;
# sized for one 80 GB GPU (H100-80GB: 79.1 GiB usable), checked with `trainplan fit`.
PLAN: list[Run] = [
    Run("gpt2", "full", "bf16-mixed", 1024, 8),
    Run("gpt2", "full", "bf16-mixed", 1024, 8, checkpointing="full"),
    Run("bloom-560m", "full", "bf16-mixed", 512, 4),
    Run("gpt2-medium", "full", "bf16-true", 1024, 4),
    Run("tinyllama-1.1b", "full", "bf16-mixed", 2048, 2),
    Run("tinyllama-1.1b", "full", "bf16-mixed", 2048, 8, checkpointing="full"),
    Run("tinyllama-1.1b", "full", "bf16-true", 2048, 4),
    Run("llama-3.2-1b", "full", "bf16-mixed", 1024, 4),
    Run("llama-3.2-1b", "lora", "bf16-true", 4096, 2),
    Run("gemma-2b", "lora", "bf16-true", 2048, 2, lora_targets="all-linear"),
    Run("phi-2", "lora", "bf16-true", 2048, 4, checkpointing="full"),
    Run("open-llama-3b", "full", "bf16-true", 1024, 2, checkpointing="full"),
    Run("llama-2-7b", "lora", "bf16-true", 2048, 1),
    Run("llama-2-7b", "lora", "bf16-true", 2048, 4, checkpointing="full"),
    Run("mistral-7b", "lora", "bf16-true", 4096, 1, checkpointing="full", lora_targets="all-linear"),
    Run("qwen2.5-7b", "lora", "bf16-true", 2048, 2),
    Run("llama-3.1-8b", "lora", "bf16-true", 1024, 1),
    Run("llama-2-7b", "qlora", "bf16-true", 2048, 2, quant="nf4"),
    Run("llama-2-7b", "qlora", "bf16-true", 512, 8, quant="nf4-dq"),
    Run("llama-3.1-8b", "qlora", "bf16-true", 4096, 1, checkpointing="full", quant="nf4-dq"),
    # Last: full fine-tuning of 6.7B in bf16-true is near capacity (the optimizer step's peak).
    Run("llama-2-7b", "full", "bf16-true", 512, 1, checkpointing="full"),
]

# The families of 2025-26 (`--plan families`): QK-norm (Qwen3, OLMo 2, Gemma 3), alternating sliding and
# global attention with soft-capping (Gemma 2), 5 local : 1 global (Gemma 3), 256k vocabularies, fused qkv
# and gate_up (Phi-3), mixture of experts with 128 fine-grained experts (Qwen3-MoE) and with attention
# sinks (gpt-oss). Sized for one 80 GB GPU; the MoE runs last (largest weights).
PLAN_FAMILIES: list[Run] = [
    Run("qwen3-0.6b", "full", "bf16-mixed", 2048, 4),
    Run("qwen3-0.6b", "full", "bf16-true", 4096, 2, checkpointing="full"),
    Run("gemma-3-1b", "full", "bf16-mixed", 2048, 2),
    Run("gemma-2-2b", "lora", "bf16-true", 2048, 2, lora_targets="all-linear"),
    Run("phi-3-mini-4k", "lora", "bf16-true", 2048, 4, checkpointing="full", lora_targets="all-linear"),
    Run("olmo-2-7b", "lora", "bf16-true", 2048, 1),
    Run("qwen3-8b", "lora", "bf16-true", 2048, 2, checkpointing="full"),
    Run("gemma-3-4b", "lora", "bf16-true", 4096, 1, lora_targets="all-linear"),
    Run("gemma-2-9b", "lora", "bf16-true", 2048, 1, checkpointing="full"),
    Run("gpt-oss-20b", "lora", "bf16-true", 1024, 1),
    Run("qwen3-30b-a3b", "lora", "bf16-true", 1024, 1),
    Run("qwen3-30b-a3b", "lora", "bf16-true", 2048, 2, checkpointing="full"),
    # transformers' per-expert loop (experts_implementation="eager"), the path before grouped_mm.
    Run("qwen3-30b-a3b", "lora", "bf16-true", 1024, 1, experts="eager"),
    Run("gpt-oss-20b", "lora", "bf16-true", 1024, 1, experts="eager"),
]

# FP8 training with torchao (`--plan fp8`, needs torchao >= 0.18 for torch 2.11): every block linear
# converted by convert_to_float8_training (the LM head kept in bf16, as torchtitan does), each beside
# its bf16 baseline, eager and under torch.compile. Full fine-tuning, where the weights' GEMMs are
# most of the step; sized for one 80 GB GPU.
PLAN_FP8: list[Run] = [
    Run("llama-3.2-1b", "full", "bf16-mixed", 2048, 4),
    Run("llama-3.2-1b", "full", "bf16-mixed", 2048, 4, fp8="tensorwise"),
    Run("llama-3.2-1b", "full", "bf16-mixed", 2048, 4, fp8="rowwise"),
    Run("open-llama-3b", "full", "bf16-true", 2048, 4, checkpointing="full"),
    Run("open-llama-3b", "full", "bf16-true", 2048, 4, checkpointing="full", fp8="tensorwise"),
    Run("llama-3.2-1b", "full", "bf16-mixed", 2048, 4, compile=True),
    Run("llama-3.2-1b", "full", "bf16-mixed", 2048, 4, fp8="tensorwise", compile=True),
]

# Liger's kernels (`--plan liger`, needs the liger-kernel wheel): what the Trainer's use_liger_kernel = true
# does to a model (liger_kernel.transformers._apply_liger_kernel_to_instance with its defaults: RMSNorm,
# rotary, SwiGLU/GeGLU and the fused linear cross-entropy, which never builds the logits). Each run is
# one of the default or families plan's with Liger applied, so that its eager twin (already measured
# on the same GPU) is the comparison; two new pairs measure both sides in the same call.
PLAN_LIGER: list[Run] = [
    # Liger patches transformers' modeling modules for the whole process (apply_rotary_pos_emb, the norm
    # and MLP classes' forward), so the runs without it come first (apply_liger refuses the other order).
    Run("llama-3.2-1b", "full", "bf16-mixed", 2048, 4),
    Run("llama-3.1-8b", "lora", "bf16-true", 4096, 2, lora_targets="all-linear"),
    Run("qwen3-0.6b", "full", "bf16-mixed", 2048, 4, liger=True),
    Run("llama-3.2-1b", "full", "bf16-mixed", 1024, 4, liger=True),
    Run("llama-3.2-1b", "full", "bf16-mixed", 2048, 4, liger=True),
    Run("tinyllama-1.1b", "full", "bf16-mixed", 2048, 8, checkpointing="full", liger=True),
    Run("llama-3.2-1b", "lora", "bf16-true", 4096, 2, liger=True),
    Run("gemma-2b", "lora", "bf16-true", 2048, 2, lora_targets="all-linear", liger=True),
    Run("gemma-2-2b", "lora", "bf16-true", 2048, 2, lora_targets="all-linear", liger=True),
    Run("qwen2.5-7b", "lora", "bf16-true", 2048, 2, liger=True),
    Run("qwen3-8b", "lora", "bf16-true", 2048, 2, checkpointing="full", liger=True),
    Run("llama-3.1-8b", "lora", "bf16-true", 4096, 2, lora_targets="all-linear", liger=True),
    Run("mistral-7b", "lora", "bf16-true", 4096, 1, checkpointing="full", lora_targets="all-linear", liger=True),
]

# torch.compile of the whole model (`--plan compile`): runs of the default and families plans compiled,
# for the compiled stack to come (Inductor fuses the elementwise ops and chooses what to save).
PLAN_COMPILE: list[Run] = [
    Run("llama-3.2-1b", "full", "bf16-mixed", 2048, 4, compile=True),
    Run("llama-3.2-1b", "lora", "bf16-true", 4096, 2, compile=True),
    Run("qwen3-8b", "lora", "bf16-true", 2048, 2, checkpointing="full", compile=True),
    Run("llama-3.1-8b", "lora", "bf16-true", 4096, 2, lora_targets="all-linear", compile=True),
]

# One of Liger's kernels at a time (`--plan liger-parts`), each run in a process of its own (`--only`):
# what each piece changes in the memory and time of one run.
PLAN_LIGER_PARTS: list[Run] = [
    Run("llama-3.2-1b", "full", "bf16-mixed", 2048, 4, liger=True, liger_only=k)
    for k in ("fused_linear_cross_entropy", "rms_norm", "swiglu", "rope")
] + [Run("gemma-2b", "lora", "bf16-true", 2048, 2, lora_targets="all-linear", liger=True,
         liger_only="fused_linear_cross_entropy")]

PLANS = {"default": PLAN, "liger-parts": PLAN_LIGER_PARTS, "families": PLAN_FAMILIES, "fp8": PLAN_FP8, "liger": PLAN_LIGER, "compile": PLAN_COMPILE}


# ---- the catalogue ---------------------------------------------------------------------------------


def catalogue_model(name: str) -> dict:
    path = MODELS_DIR / f"{name}.json"
    if not path.is_file():
        raise SystemExit(f"error: model '{name}' is not in the catalogue ({path} does not exist)")
    return json.loads(path.read_text())


def parameter_estimate(entry: dict) -> float:
    """Parameters for the time estimate of the plan: the catalogue's count, else 12 L h^2 + 2 V h."""
    if entry.get("parameters"):
        return float(entry["parameters"])
    c = entry["config"]
    h = c.get("hidden_size") or c.get("n_embd") or c.get("d_model")
    layers = c.get("num_hidden_layers") or c.get("n_layer") or c.get("n_layers")
    return 12.0 * layers * h * h + 2.0 * c["vocab_size"] * h


def planned_seconds(run: Run) -> float:
    """Rough wall time of one run on an H100: building the model, warm-up and timed steps."""
    p = parameter_estimate(catalogue_model(run.model))
    tokens = run.seq * run.micro_batch
    passes = 6.0 if run.method == "full" else 4.0
    if run.checkpointing == "full":
        passes += 2.0
    step = passes * p * tokens / 350e12 + 0.05 + (2.0 * p * 16 / 3.0e12 if run.method == "full" else 0.0)
    build = 3.0 + p / 1e9 * (1.5 if run.method == "qlora" else 0.8)
    if run.compile:
        build += 60.0  # Inductor compiles forward and backward during the first steps
    return build + (WARMUP_STEPS + TIMED_STEPS) * step + 2.0


def gpu_catalogue_name(device_name: str) -> Optional[str]:
    """The data/gpus/ entry whose name or alias is the device's name (case-insensitive)."""
    wanted = device_name.strip().lower()
    for path in sorted(GPUS_DIR.glob("*.json")):
        entry = json.loads(path.read_text())
        if "memory_MiB" not in entry:
            continue
        names = [entry["name"]] + list(entry.get("aliases", []))
        if any(n.lower() == wanted for n in names):
            return entry["name"]
    return None


# ---- one run ---------------------------------------------------------------------------------------


def hf_config(entry: dict, tiny: bool):
    from transformers import AutoConfig

    cfg = dict(entry["config"])
    model_type = cfg.pop("model_type")
    cfg.pop("architectures", None)
    cfg.pop("torch_dtype", None)
    if tiny:  # --smoke: the same family at toy size, to check the code path on a CPU
        for k in ("num_hidden_layers", "n_layer", "n_layers"):
            if k in cfg:
                cfg[k] = 2
        for k in ("hidden_size", "n_embd", "d_model"):
            if k in cfg:
                cfg[k] = 128
        for k in ("intermediate_size", "n_inner"):
            if cfg.get(k):
                cfg[k] = 256
        for k in ("num_attention_heads", "n_head", "n_heads"):
            if k in cfg:
                cfg[k] = 4
        if "num_key_value_heads" in cfg:  # keep the kind of attention: multi-head, grouped or multi-query
            heads = entry["config"].get("num_attention_heads", 4)
            kv = cfg["num_key_value_heads"]
            cfg["num_key_value_heads"] = 4 if kv >= heads else (1 if kv == 1 else 2)
        if "head_dim" in cfg:
            cfg["head_dim"] = 32
        cfg["vocab_size"] = 1000
        if isinstance(cfg.get("layer_types"), list):  # per-layer lists follow the layer count
            cfg["layer_types"] = cfg["layer_types"][:2]
    config = AutoConfig.for_model(model_type, **cfg)
    if tiny:  # token ids, the class defaults included, must fall in the toy vocabulary
        for k in ("pad_token_id", "bos_token_id", "eos_token_id"):
            if isinstance(getattr(config, k, None), int) and getattr(config, k) >= cfg["vocab_size"]:
                setattr(config, k, None)
    return config, model_type


def from_config(config, dtype, attn: str):
    import transformers

    try:
        return transformers.AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation=attn)
    except TypeError:  # transformers 4.x names the argument torch_dtype
        return transformers.AutoModelForCausalLM.from_config(config, torch_dtype=dtype, attn_implementation=attn)


def build_model(run: Run, device: str, tiny: bool):
    import torch

    entry = catalogue_model(run.model)
    config, model_type = hf_config(entry, tiny)
    if run.experts:
        config._experts_implementation = run.experts
    # bf16-mixed: fp32 weights under autocast; bf16-true: every tensor bf16, the optimizer's too.
    dtype = torch.float32 if run.precision == "bf16-mixed" else torch.bfloat16
    torch.manual_seed(SEED)
    with torch.device(device):
        try:
            model = from_config(config, dtype, "sdpa")
        except (ValueError, ImportError, NotImplementedError):  # a family without SDPA support
            model = from_config(config, dtype, "eager")
    model.train()
    attention = getattr(model.config, "_attn_implementation", None) or "eager"
    if ROUTING == "balanced":
        balance_routers(model)

    if run.checkpointing == "full":
        kwargs = {"use_reentrant": False}
        if hasattr(model, "activation_checkpointing_enable"):
            model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
        if hasattr(model.config, "use_cache"):
            model.config.use_cache = False

    if run.method == "qlora":
        quantize_block_linears(model, run.quant, device)
    if run.fp8:
        convert_to_float8(model, run.fp8, emulate=not device.startswith("cuda"))
    global LIGER_APPLIED
    if LIGER_APPLIED and not run.liger:
        raise RuntimeError("Liger's patches of transformers' modules are already in this process: "
                           "measure runs without Liger first (or in another process)")
    if run.liger:
        apply_liger(model, run.liger_only)
        LIGER_APPLIED = True
    if run.compile:
        model.compile()
    targets = None
    if run.method in ("lora", "qlora"):
        from peft import LoraConfig, get_peft_model

        targets = "all-linear" if run.lora_targets == "all-linear" else QV_TARGETS[model_type]
        lora = LoraConfig(r=run.lora_rank, lora_alpha=run.lora_alpha, lora_dropout=0.0, bias="none",
                          target_modules=targets, task_type="CAUSAL_LM")
        model = get_peft_model(model, lora)
        if run.precision == "bf16-true":
            # PEFT keeps adapters in fp32 by default; bf16-true means everything in bf16.
            for p in model.parameters():
                if p.requires_grad:
                    p.data = p.data.to(torch.bfloat16)
    return model, attention, targets, config


def apply_liger(model, only: Optional[str] = None) -> None:
    """Liger's kernels on this instance, as transformers' Trainer applies them under use_liger_kernel
    (trainer.py: _apply_liger_kernel_to_instance(model=...) with no arguments, i.e. each model type's
    defaults). Raises when Liger has nothing for the model type, so that no run is labelled Liger
    without it."""
    from liger_kernel.transformers import _apply_liger_kernel_to_instance

    before = {type(m).__name__ for m in model.modules()}
    if only:  # that kernel alone, the others off
        kernels = ("rope", "rms_norm", "swiglu", "fused_linear_cross_entropy")
        _apply_liger_kernel_to_instance(model=model, **{k: k == only for k in kernels})
    else:
        _apply_liger_kernel_to_instance(model=model)
    after = {type(m).__name__ for m in model.modules()}
    patched = sorted(after - before)
    print(f"    liger: module types now present {patched or '(forward patched in place)'}", flush=True)


def convert_to_float8(model, recipe: str, emulate: bool) -> None:
    """torchao float8 training on every linear layer of the blocks (not the LM head; dimensions
    divisible by 16, as torch._scaled_mm needs); emulate: the casts without FP8 GEMMs (CPU smoke)."""
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training

    config = Float8LinearConfig.from_recipe_name(recipe)
    if emulate:
        config = dataclasses.replace(config, emulate=True)

    def block_linear(module, fqn: str) -> bool:
        import torch

        return (isinstance(module, torch.nn.Linear) and "lm_head" not in fqn
                and module.in_features % 16 == 0 and module.out_features % 16 == 0)

    convert_to_float8_training(model, module_filter_fn=block_linear, config=config)


def routers(model) -> list:
    """The MoE routers (transformers' *TopKRouter modules: weight [experts, hidden])."""
    return [m for m in model.modules() if type(m).__name__.endswith("TopKRouter")]


def balance_routers(model) -> None:
    """Routes as a trained, load-balanced router does. A random-weight model sends most tokens of a layer
    to the same few experts (its hidden states barely differ between tokens: on an H200, about 30 of
    Qwen3-MoE's 128 experts took any token, the busiest 16x the mean load, whatever the router's
    weights), while a trained router spreads them (its auxiliary balancing loss). Gaussian noise of
    standard deviation 10 added to each router's input (the normed hidden state, about unit RMS) makes
    its top-k independent of the token: every expert takes about tokens x k / experts. Cost: two
    elementwise kernels per MoE layer (randn_like, add); the experts still read the hidden state
    without noise."""
    import torch

    def noisy(module, args):
        return (args[0] + 10.0 * torch.randn_like(args[0]),) + tuple(args[1:])

    for r in routers(model):
        r.register_forward_pre_hook(noisy)


def watch_routing(model) -> dict:
    """Hooks on the routers that record, per call, how many experts took a token and the busiest
    expert's load over the mean; returns the lists they fill."""
    import torch

    seen: dict = {"experts_hit": [], "max_over_mean_load": []}

    def hook(module, inputs, output):
        indices = output[-1]
        if not isinstance(indices, torch.Tensor) or indices.dtype not in (torch.int64, torch.int32):
            return
        load = torch.bincount(indices.reshape(-1), minlength=module.num_experts).float()
        seen["experts_hit"].append(int((load > 0).sum()))
        seen["max_over_mean_load"].append(float(load.max() / load.mean()))

    for r in routers(model):
        r.register_forward_hook(hook)
    return seen


def quantize_block_linears(model, quant: str, device: str) -> None:
    """Replaces every nn.Linear but the output head by a bitsandbytes NF4 Linear4bit (QLoRA,
    arXiv:2305.14314): 4-bit weights with one absmax per 64, double-quantized for nf4-dq."""
    import torch
    import bitsandbytes as bnb

    head = model.get_output_embeddings()
    for parent in list(model.modules()):
        for child_name, child in list(parent.named_children()):
            if not isinstance(child, torch.nn.Linear) or child is head:
                continue
            q = bnb.nn.Linear4bit(child.in_features, child.out_features, bias=child.bias is not None,
                                  compute_dtype=torch.bfloat16, compress_statistics=(quant == "nf4-dq"),
                                  quant_type="nf4", device="meta")
            kwargs = dict(requires_grad=False, compress_statistics=(quant == "nf4-dq"), quant_type="nf4")
            try:
                weight = bnb.nn.Params4bit(child.weight.data, module=q, **kwargs)
            except TypeError:  # bitsandbytes before 0.43 has no `module`
                weight = bnb.nn.Params4bit(child.weight.data, **kwargs)
            q.weight = weight.to(device)  # quantizes on the way to the GPU
            if child.bias is not None:
                q.bias = torch.nn.Parameter(child.bias.data, requires_grad=False)
            setattr(parent, child_name, q)
            del child
    gc.collect()


# Kernel categories of a profiled step (`--profile`), first match wins: grouped GEMMs (MoE experts) before
# dense GEMMs, attention before both.
KERNEL_CATEGORIES = [
    ("attention", r"flash|fmha|attention|attn|efficient|cudnn_generated|sdpa"),
    ("grouped_gemm", r"group"),
    ("gemm", r"gemm|cutlass|xmma|nvjet|sm90_|sm80_|sm100_|cublas|matmul|ampere_|hopper"),
    ("optimizer", r"multi_tensor|foreach|fused_adam|adam"),
    ("norm", r"norm"),
    ("softmax_loss", r"softmax|cross_entropy|nll_loss|log_softmax"),
    ("routing", r"sort|topk|histc|histogram|cumsum|scan|radix|nonzero|index_add|scatter_add"),
    ("copy_cast", r"copy|convert|cast|memcpy|memset|fill|cat|index|gather|scatter|transpose|contiguous"),
    ("elementwise", r"elementwise|vectorized|unrolled|pointwise|reduce|where|mul|add|silu|gelu|rotary|sum|mean"),
]


def kernel_category(name: str) -> str:
    n = name.lower()
    for category, pattern in KERNEL_CATEGORIES:
        if re.search(pattern, n):
            return category
    return "other"


def profile_step(forward, opt, sync) -> dict:
    """Phases of a step timed separately (median of 3, synchronised), then one step under
    torch.profiler: CUDA kernel time by category, the kernel count and the 15 longest kernels."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    phases: dict[str, list[float]] = {"forward_s": [], "backward_s": [], "optimizer_s": [], "zero_grad_s": []}
    for _ in range(3):
        t0 = time.perf_counter()
        loss = forward()
        sync()
        t1 = time.perf_counter()
        loss.backward()
        sync()
        t2 = time.perf_counter()
        opt.step()
        sync()
        t3 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        sync()
        t4 = time.perf_counter()
        for k, v in zip(phases, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            phases[k].append(v)
    activities = [ProfilerActivity.CUDA] if torch.cuda.is_available() else [ProfilerActivity.CPU]  # --smoke
    with profile(activities=activities) as prof:
        forward().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync()
    by_category: dict[str, float] = {}
    count_by_category: dict[str, int] = {}
    top: dict[str, list] = {}
    for e in prof.events():
        if not str(getattr(e, "device_type", "")).endswith("CUDA"):
            continue
        seconds = e.time_range.elapsed_us() / 1e6
        c = kernel_category(e.name)
        by_category[c] = by_category.get(c, 0.0) + seconds
        count_by_category[c] = count_by_category.get(c, 0) + 1
        t = top.setdefault(e.name[:100], [0.0, 0])
        t[0] += seconds
        t[1] += 1
    return {
        "phases_s": {k: statistics.median(v) for k, v in phases.items()},
        "kernel_time_s_total": sum(by_category.values()),
        "kernels": sum(count_by_category.values()),
        "kernel_time_s_by_category": by_category,
        "kernels_by_category": count_by_category,
        "top_kernels": [{"name": k, "s": v[0], "count": v[1]}
                        for k, v in sorted(top.items(), key=lambda kv: -kv[1][0])[:15]],
    }


def measure(run: Run, device: str, tiny: bool, profile: bool = False) -> dict:
    import torch

    cuda = device.startswith("cuda")
    model, attention, targets, config = build_model(run, device, tiny)
    trainable = [p for p in model.parameters() if p.requires_grad]
    routing = watch_routing(model)
    # torch's default AdamW: foreach on CUDA (the planner's default, fused_optimizer = false).
    opt = torch.optim.AdamW(trainable, lr=1e-5)
    vocab = config.vocab_size
    gen = torch.Generator(device="cpu").manual_seed(SEED)
    ids = torch.randint(0, vocab, (run.micro_batch, run.seq), generator=gen).to(device)

    def forward():
        with torch.autocast(device_type="cuda" if cuda else "cpu", dtype=torch.bfloat16,
                            enabled=run.precision == "bf16-mixed"):
            return model(input_ids=ids, labels=ids).loss

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    def step() -> float:
        sync()
        t0 = time.perf_counter()
        loss = forward()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if cuda:
            torch.cuda.synchronize()
        return time.perf_counter() - t0

    if cuda:
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    for _ in range(WARMUP_STEPS):
        step()
    times = [step() for _ in range(TIMED_STEPS)]
    out = {
        "attention": attention,
        "experts_implementation": getattr(config, "_experts_implementation", None),
        "targets": targets,
        "step_time_s": statistics.median(times),
        "parameters": sum(p.numel() for p in model.parameters()),
        "trainable": sum(p.numel() for p in trainable),
    }
    if cuda:
        free, total = torch.cuda.mem_get_info()
        out["peak_allocated"] = torch.cuda.max_memory_allocated()
        out["reserved"] = torch.cuda.max_memory_reserved()
        out["device_total"] = total - free
    if routing["experts_hit"]:
        out["routing"] = {"routing": ROUTING,
                          "experts_hit_median": statistics.median(routing["experts_hit"]),
                          "max_over_mean_load_median": statistics.median(routing["max_over_mean_load"])}
    if profile:  # after the memory readings: the profiler's own buffers are not the run's
        out["profile"] = profile_step(forward, opt, sync)
    del step, forward, model, opt, trainable, ids
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    return out


# ---- reference cases -------------------------------------------------------------------------------


def transformers_version() -> str:
    import transformers

    return transformers.__version__


def versions() -> str:
    import torch
    import transformers

    parts = [f"torch {torch.__version__}", f"transformers {transformers.__version__}"]
    try:
        import peft

        parts.append(f"peft {peft.__version__}")
    except ImportError:
        pass
    try:
        import bitsandbytes

        parts.append(f"bitsandbytes {bitsandbytes.__version__}")
    except ImportError:
        pass
    if torch.version.cuda:
        parts.append(f"CUDA {torch.version.cuda}")
    return ", ".join(parts)


def reference_case(run: Run, m: dict, gpu: str, device_name: str, stamp: str, env: str) -> dict:
    gib = float(2**30)
    training = {
        "method": run.method,
        "precision": run.precision,
        "optimizer": "adamw",
        "optimizer_impl": "foreach",  # torch.optim.AdamW as the loop below builds it: foreach on CUDA
        "strategy": "single",
        "tp": 1,
        "pp": 1,
        "micro_batch": run.micro_batch,
        "grad_accum": 1,
        "seq": run.seq,
        "checkpointing": run.checkpointing,
        "attention": "eager" if m["attention"] == "eager" else "sdpa",
        "offload": "none",
        "framework": "pytorch",
        "transformers": transformers_version(),
    }
    if run.method != "full":
        targets = m["targets"]
        training["lora"] = {"rank": run.lora_rank, "alpha": run.lora_alpha, "dropout": 0.0,
                            "targets": targets if targets == "all-linear" else list(targets)}
    if run.method == "qlora":
        training["quant"] = run.quant
    if run.fp8:
        training["fp8"] = f"torchao-{run.fp8}"
    if run.compile:
        training["compile"] = True
    if run.liger:
        training["liger"] = True if not run.liger_only else run.liger_only
    steps = f"{WARMUP_STEPS} warm-up and {TIMED_STEPS} timed steps"
    measured = [
        {"metric": "peak_allocated", "value": round(m["peak_allocated"] / gib, 4), "unit": "GiB",
         "what": f"torch.cuda.max_memory_allocated() / 2**30 over {steps}, peak statistics reset after the model was built",
         "tolerance_pct": TOLERANCE_PCT["peak_allocated"]},
        {"metric": "reserved", "value": round(m["reserved"] / gib, 4), "unit": "GiB",
         "what": f"torch.cuda.max_memory_reserved() / 2**30 over the same steps",
         "tolerance_pct": TOLERANCE_PCT["reserved"]},
        {"metric": "device_total", "value": round(m["device_total"] / gib, 4), "unit": "GiB",
         "what": "torch.cuda.mem_get_info(): total - free right after the steps, / 2**30 (what nvidia-smi shows: "
                 "this process's CUDA context, allocator cache and tensors; the GPU ran nothing else)",
         "tolerance_pct": TOLERANCE_PCT["device_total"]},
        {"metric": "step_time", "value": round(m["step_time_s"], 5), "unit": "s",
         "what": f"median wall time of {TIMED_STEPS} timed steps after {WARMUP_STEPS} warm-up steps (forward with "
                 "the loss, backward, AdamW step, zero_grad), torch.cuda.synchronize() before and after each",
         "tolerance_pct": TOLERANCE_PCT["step_time"]},
        {"metric": "tokens_per_s", "value": round(run.seq * run.micro_batch / m["step_time_s"], 1), "unit": "tokens/s",
         "what": "micro_batch x seq / the median step time", "tolerance_pct": TOLERANCE_PCT["tokens_per_s"]},
    ]
    return {
        "name": run.name,
        "source": {"document": f"tools/measure/measure.py on 1x {device_name} ({env})",
                   "table": f"run of {stamp}", "row": run.name},
        "note": ("random weights from the catalogue config (no download); input: random token ids, labels = the "
                 f"inputs (the model's own shifted cross-entropy); {m['parameters']:,} parameters, "
                 f"{m['trainable']:,} trainable; LoRA dropout 0; QLoRA quantizes every linear layer but the output "
                 "head (bitsandbytes Linear4bit, bf16 compute)"
                 + (f"; MoE routing {'balanced (noise of std 10 at each router input)' if m['routing']['routing'] == 'balanced' else 'as the random-weight model routes'}: "
                    f"median {m['routing']['experts_hit_median']:.0f} experts took tokens per layer, busiest at "
                    f"{m['routing']['max_over_mean_load_median']:.2f}x the mean load" if m.get("routing") else "")),
        "model": run.model if not run.experts else {
            "name": f"{run.model} (experts_implementation={run.experts})",
            "source": f"data/models/{run.model}.json with experts_implementation = {run.experts}",
            "hf_config": {**catalogue_model(run.model)["config"], "experts_implementation": run.experts}},
        "hardware": {"gpu": gpu, "count": 1},
        "training": training,
        "measured": measured,
    }


def write_json(path: Path, doc: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def write_reference(path: Path, cases: list[dict], device_name: str) -> None:
    write_json(path, {
        "schema": "trainplan.reference/1",
        "description": f"Training steps measured by tools/measure/measure.py on one {device_name}.",
        "cases": cases,
    })


# ---- the command -----------------------------------------------------------------------------------


def selected(args) -> list[Run]:
    runs = PLANS[args.plan]
    if args.only:
        runs = [r for r in runs if any(s in r.name for s in args.only)]
    return runs


def print_plan(runs: list[Run], budget: float) -> None:
    total = 0.0
    print(f"{'#':>2}  {'run':58s} {'est. s':>7}")
    for i, r in enumerate(runs, 1):
        s = planned_seconds(r)
        total += s
        mark = "" if total <= budget else "  (beyond the budget: skipped unless time is left)"
        print(f"{i:>2}  {r.name:58s} {s:7.1f}{mark}")
    print(f"{len(runs)} runs, about {total:.0f} s of {budget:.0f} s budget "
          f"({WARMUP_STEPS} warm-up + {TIMED_STEPS} timed steps each, plus model construction)")


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="print the plan of runs and exit (no CUDA needed)")
    ap.add_argument("--out", type=Path, help="reference file to write (default data/reference/measured-<gpu>.json)")
    ap.add_argument("--plan", choices=sorted(PLANS), default="default",
                    help="which plan: default (0.1B-8B Llama-era models), families (Qwen3, Gemma 2/3, Phi-3, "
                         "OLMo 2, gpt-oss, Qwen3-MoE), fp8 (torchao float8), liger (Liger's kernels) or compile (torch.compile)")
    ap.add_argument("--only", action="append", help="only runs whose name contains TEXT (repeatable)")
    ap.add_argument("--budget-s", type=float, default=540.0,
                    help="stop starting new runs when the next would pass this many seconds (default 540)")
    ap.add_argument("--gpu", help="catalogue GPU name, when the device's name is not in data/gpus/")
    ap.add_argument("--profile", type=Path,
                    help="also write, per run, the phases timed separately and one profiled step's CUDA kernels "
                         "by category to this JSON file")
    ap.add_argument("--routing", choices=["balanced", "model"], default="balanced",
                    help="MoE: balanced = every expert takes about the same number of tokens, as under a trained "
                         "router (noise at the routers' input; default); model = as the random-weight model routes "
                         "(a few experts take most tokens)")
    ap.add_argument("--smoke", action="store_true",
                    help="toy-size models on the CPU (or the GPU if present) to check the code path; writes nothing")
    args = ap.parse_args(argv)

    global ROUTING
    ROUTING = args.routing
    runs = selected(args)
    if not runs:
        print("error: no run matches --only", file=sys.stderr)
        return 2
    if args.dry_run:
        print_plan(runs, args.budget_s)
        return 0

    start = time.monotonic()
    import torch

    cuda = torch.cuda.is_available()
    if not cuda and not args.smoke:
        print("error: no CUDA device (use --dry-run to see the plan, --smoke to check the code on a CPU)",
              file=sys.stderr)
        return 2
    device = "cuda" if cuda else "cpu"
    device_name = torch.cuda.get_device_name(0) if cuda else "CPU"
    gpu = args.gpu or (gpu_catalogue_name(device_name) if cuda else None)
    if cuda and not gpu and not args.smoke:
        print(f"error: '{device_name}' is not a name or alias in data/gpus/; pass --gpu NAME", file=sys.stderr)
        return 2
    try:
        import bitsandbytes  # noqa: F401

        have_bnb = cuda
    except ImportError:
        have_bnb = False
    out = args.out or REPO / "data" / "reference" / f"measured-{(gpu or 'gpu').lower()}.json"
    stamp = datetime.date.today().isoformat()
    env = versions()
    print(f"device: {device_name} = {gpu}; {env}", flush=True)

    cases: list[dict] = []
    profiles: list[dict] = []
    for i, run in enumerate(runs, 1):
        elapsed = time.monotonic() - start
        if run.method == "qlora" and not have_bnb:
            print(f"[{i}/{len(runs)}] {run.name}: skipped (bitsandbytes with CUDA is not available)", flush=True)
            continue
        if elapsed + planned_seconds(run) > args.budget_s:
            print(f"[{i}/{len(runs)}] {run.name}: skipped (budget: {elapsed:.0f} s used of {args.budget_s:.0f})",
                  flush=True)
            continue
        t0 = time.monotonic()
        failure = None
        try:
            m = measure(run, device, args.smoke, profile=args.profile is not None)
        except torch.cuda.OutOfMemoryError:
            failure = "out of memory"
        except Exception as e:  # one broken configuration must not lose the others' results
            failure = f"failed: {type(e).__name__}: {e}"
        if failure:
            # Outside the except block: the traceback, and the tensors its frames hold, are gone.
            gc.collect()
            if cuda:
                torch.cuda.empty_cache()
            print(f"[{i}/{len(runs)}] {run.name}: {failure}", flush=True)
            continue
        took = time.monotonic() - t0
        line = f"[{i}/{len(runs)}] {run.name} ({m['attention']}): step {m['step_time_s'] * 1e3:.1f} ms"
        if cuda:
            line += (f", peak allocated {m['peak_allocated'] / 2**30:.2f} GiB, reserved {m['reserved'] / 2**30:.2f} GiB, "
                     f"device {m['device_total'] / 2**30:.2f} GiB")
        if "routing" in m:
            line += (f", experts hit {m['routing']['experts_hit_median']:.0f}, busiest/mean load "
                     f"{m['routing']['max_over_mean_load_median']:.2f}")
        print(f"{line} ({took:.0f} s)", flush=True)
        if args.profile is not None:
            profiles.append({"run": run.name, "attention": m["attention"],
                             "experts_implementation": m["experts_implementation"], "routing": m.get("routing"),
                             "parameters": m["parameters"],
                             "trainable": m["trainable"], "step_time_s": m["step_time_s"], **m["profile"]})
            write_json(args.profile, {"what": "per run: forward, backward, optimizer step and zero_grad timed "
                                              "separately (median of 3, synchronised), then one step under "
                                              "torch.profiler: CUDA kernel time and count by category "
                                              "(KERNEL_CATEGORIES in tools/measure/measure.py), 15 longest kernels",
                                      "device": device_name, "versions": env, "date": stamp, "runs": profiles})
        if cuda and not args.smoke:
            cases.append(reference_case(run, m, gpu, device_name, stamp, env))
            write_reference(out, cases, device_name)  # after every run: a cut-off keeps what was measured
    if cases:
        print(f"wrote {len(cases)} cases to {out} ({time.monotonic() - start:.0f} s)")
    elif not args.smoke:
        print("nothing measured", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
