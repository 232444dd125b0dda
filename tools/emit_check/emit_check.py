#!/usr/bin/env python3
"""Load what `trainplan --emit` writes with the frameworks' own parsers.

For a set of plans (dense FSDP, multi-node FSDP, ZeRO-2, ZeRO-3 with ZeRO++ and with offload, LoRA
DDP, QLoRA on one GPU, multi-node DDP, V100 fp16, Megatron TP+PP+VP+SP, MoE with expert
parallelism) it runs trainplan and hands each emitted file to:

- deepspeed: deepspeed.runtime.config.DeepSpeedConfig on the JSON dict, with the data-parallel
  world size of the plan, so that its batch assertion (train_batch_size == micro-batch x
  accumulation x data-parallel ranks) and its pydantic ZeRO config validation run;
- accelerate: accelerate's `accelerate launch` argument handling (_validate_launch_command) on the
  YAML, then the environment it prepares (prepare_multi_gpu_env / prepare_deepspeed_cmd_env) and,
  for FSDP, FullyShardedDataParallelPlugin built from that environment;
- Megatron-LM: megatron.training.arguments.parse_args on the pretrain_gpt.py arguments, when
  Megatron-LM is importable (put its checkout on PYTHONPATH).

Each framework missing from this Python is reported as "skipped: ..." and is not a failure. Exit 0
when every check that ran passed, 1 otherwise. Python is never required to build or test trainplan.

  tools/emit_check/emit_check.py --trainplan build/cli/trainplan
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile

# name, trainplan arguments, data-parallel ranks (GPUs / (TP x PP)), formats expected to be written
# (Megatron plans: data-parallel ranks x TP x PP = the GPUs, given to its parser as WORLD_SIZE)
PLANS = [
    ("dense-fsdp", "estimate llama-2-7b 8xA100-80GB --strategy fsdp-full --micro-batch 2 "
     "--grad-accum 4 --checkpointing full", 8, ["accelerate", "deepspeed", "torchrun"]),
    ("multinode-fsdp", "estimate llama-2-13b 2x8xA100-80GB --strategy fsdp-hybrid --micro-batch 1 "
     "--grad-accum 8", 16, ["accelerate", "torchrun"]),
    ("zero2", "estimate llama-2-7b 8xA100-80GB --framework deepspeed --strategy zero2 "
     "--micro-batch 4 --grad-accum 2", 8, ["accelerate", "deepspeed", "torchrun"]),
    ("zero3-zero++", "estimate llama-2-13b 2x8xA100-80GB --framework deepspeed --strategy zero3 "
     "--zero-plus-plus --micro-batch 1 --grad-accum 4", 16, ["accelerate", "deepspeed"]),
    ("zero3-offload", "estimate llama-2-13b 4xA100-80GB --framework deepspeed --strategy zero3 "
     "--offload optimizer --micro-batch 2 --grad-accum 8", 4, ["accelerate", "deepspeed"]),
    ("lora-ddp", "estimate llama-2-13b 4xA100-80GB --method lora --strategy ddp --micro-batch 4 "
     "--grad-accum 2", 4, ["accelerate", "deepspeed", "torchrun"]),
    ("qlora-1gpu", "estimate llama-2-7b 1xA100-80GB --method qlora --strategy single "
     "--micro-batch 4 --grad-accum 4", 1, ["accelerate", "torchrun"]),
    ("multinode-ddp", "estimate llama-3.2-1b 2x8xA100-80GB --strategy ddp --micro-batch 4 "
     "--grad-accum 2", 16, ["accelerate", "deepspeed", "torchrun"]),
    ("v100-fp16", "estimate llama-2-7b 8xV100-32GB --framework deepspeed --strategy zero3 "
     "--micro-batch 1 --grad-accum 8", 8, ["accelerate", "deepspeed"]),
    ("megatron-tp-pp-vp-sp", "estimate llama-2-13b 2x8xA100-80GB --framework megatron "
     "--strategy zero1 --tp 8 --pp 2 --pp-virtual 2 --sequence-parallel "
     "--checkpointing selective --micro-batch 1 --grad-accum 8", 1, ["torchrun"], 16),
    ("moe-ep", "estimate mixtral-8x7b 8xH100-80GB --framework megatron --strategy zero1 "
     "--expert-parallel 8 --micro-batch 1 --grad-accum 16", 8, ["torchrun"], 8),
]

# Plans a format cannot express: trainplan must refuse them (exit 2).
REFUSED = [
    ("tp-pp-in-deepspeed", "estimate gpt3-175b 8x8xA100-80GB --tp 8 --pp 8 --global-batch 64",
     "deepspeed"),
    ("tp-pp-in-accelerate", "estimate gpt3-175b 8x8xA100-80GB --tp 8 --pp 8 --global-batch 64",
     "accelerate"),
    ("hybrid-in-deepspeed", "estimate llama-2-13b 2x8xA100-80GB --strategy fsdp-hybrid", "deepspeed"),
    ("ep-in-deepspeed", "estimate mixtral-8x7b 8xH100-80GB --strategy zero3 --expert-parallel 8",
     "deepspeed"),
]


def emitted(trainplan, args, fmt):
    cmd = [trainplan] + shlex.split(args) + ["--emit", fmt]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


# --- DeepSpeed ------------------------------------------------------------------------------

def deepspeed_checker():
    try:
        import deepspeed.comm  # noqa: F401
        from deepspeed.runtime import config as ds_config
    except Exception as e:  # ImportError, or a broken install
        return None, f"deepspeed not importable ({type(e).__name__}: {e})"

    class DataParallel:  # the mpu interface DeepSpeedConfig asks for the data-parallel size
        def __init__(self, dp):
            self.dp = dp

        def get_data_parallel_world_size(self):
            return self.dp

    def check(text, dp):
        # DeepSpeedConfig reads the world size only once deepspeed.comm answers get_rank(); without
        # a process group it falls back to 1. Answer rank 0 so that the plan's DP size is used.
        ds_config.dist.get_rank = lambda *a, **k: 0
        cfg = ds_config.DeepSpeedConfig(json.loads(text), mpu=DataParallel(dp))
        return (f"DeepSpeedConfig: train_batch_size {cfg.train_batch_size} = "
                f"{cfg.train_micro_batch_size_per_gpu} x {cfg.gradient_accumulation_steps} x {dp}, "
                f"ZeRO stage {cfg.zero_optimization_stage}")

    return check, None


# --- accelerate -----------------------------------------------------------------------------

def accelerate_checker():
    try:
        from accelerate.commands.launch import _validate_launch_command, launch_command_parser
        from accelerate.utils import prepare_deepspeed_cmd_env, prepare_multi_gpu_env
    except Exception as e:
        return None, f"accelerate not importable ({type(e).__name__}: {e})"

    def check(text, dp, workdir):
        from accelerate.utils import constants
        path = os.path.join(workdir, "accelerate.yaml")
        with open(path, "w") as f:
            f.write(text)
        # as `accelerate launch --config_file accelerate.yaml train.py` reads it (launch_command)
        args = launch_command_parser().parse_args(["--config_file", path, "train.py"])
        args, defaults, mp_from_config_flag = _validate_launch_command(args)
        kind = str(defaults.distributed_type) if defaults else "?"
        if args.use_deepspeed:
            fields = list(defaults.deepspeed_config.keys()) if defaults else []
            if mp_from_config_flag:
                fields.append("mixed_precision")
            args.deepspeed_fields_from_accelerate_config = ",".join(fields)
            _, env = prepare_deepspeed_cmd_env(args)
        elif args.num_processes > 1 or args.use_fsdp:
            env = prepare_multi_gpu_env(args)
        else:
            env = {}
        detail = ""
        if args.use_fsdp:
            # FullyShardedDataParallelPlugin itself wants a GPU; check what it would read.
            for key, allowed in (("FSDP_SHARDING_STRATEGY", constants.FSDP_SHARDING_STRATEGY),
                                 ("FSDP_AUTO_WRAP_POLICY", constants.FSDP_AUTO_WRAP_POLICY),
                                 ("FSDP_BACKWARD_PREFETCH", constants.FSDP_BACKWARD_PREFETCH),
                                 ("FSDP_STATE_DICT_TYPE", constants.FSDP_STATE_DICT_TYPE)):
                if str(env.get(key)) not in allowed:
                    raise ValueError(f"{key}={env.get(key)!r} is not one of {allowed}")
            detail = (f", FSDP {env['FSDP_SHARDING_STRATEGY']}, wrap "
                      f"{env.get('FSDP_TRANSFORMER_CLS_TO_WRAP', '-')}")
        if args.use_deepspeed:
            detail = f", ZeRO stage {env.get('ACCELERATE_DEEPSPEED_ZERO_STAGE', 'from ds_config.json')}"
        return (f"accelerate launch: {kind}, {args.num_processes} processes on "
                f"{args.num_machines} machine(s), mixed_precision {args.mixed_precision}{detail}")

    return check, None


# --- Megatron-LM ----------------------------------------------------------------------------

def megatron_checker():
    try:
        from megatron.training.arguments import parse_args
    except Exception as e:
        return None, (f"Megatron-LM not importable ({type(e).__name__}: {e}); put a Megatron-LM "
                      "checkout on PYTHONPATH")

    def check(text, world):
        words = shlex.split(text)
        argv = words[words.index("pretrain_gpt.py") + 1:]
        env = {"WORLD_SIZE": str(world), "RANK": "0"}
        saved_argv, saved_env = sys.argv, dict(os.environ)
        sys.argv = ["pretrain_gpt.py"] + argv + ["--mock-data", "--train-iters", "1", "--lr", "1e-4"]
        os.environ.update(env)
        try:
            a = parse_args()
        finally:
            sys.argv = saved_argv
            os.environ.clear()
            os.environ.update(saved_env)
        return (f"Megatron parse_args: TP {a.tensor_model_parallel_size} PP "
                f"{a.pipeline_model_parallel_size}, micro {a.micro_batch_size}, global "
                f"{a.global_batch_size}")

    return check, None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trainplan", required=True, help="path to the trainplan binary")
    opts = p.parse_args()

    ds, ds_why = deepspeed_checker()
    acc, acc_why = accelerate_checker()
    meg, meg_why = megatron_checker()
    for name, why in (("deepspeed", ds_why), ("accelerate", acc_why), ("megatron", meg_why)):
        if why:
            print(f"skipped: {name}: {why}")

    failures = 0
    checks = 0
    for name, args, dp, formats, *world in PLANS:
        with tempfile.TemporaryDirectory() as work:
            def run(label, f):
                nonlocal failures, checks
                checks += 1
                try:
                    print(f"ok   {name:22} {label:10} {f()}")
                except Exception as e:
                    failures += 1
                    print(f"FAIL {name:22} {label:10} {type(e).__name__}: {e}")

            texts = {}
            for fmt in formats:
                try:
                    texts[fmt] = emitted(opts.trainplan, args, fmt)
                except RuntimeError as e:
                    failures += 1
                    print(f"FAIL {name:22} {fmt:10} {e}")
            if "deepspeed" in texts:
                with open(os.path.join(work, "ds_config.json"), "w") as f:
                    f.write(texts["deepspeed"])
                if ds:
                    run("deepspeed", lambda: ds(texts["deepspeed"], dp))
            if "accelerate" in texts and acc:
                cwd = os.getcwd()
                os.chdir(work)  # deepspeed_config_file: ds_config.json is relative
                try:
                    run("accelerate", lambda: acc(texts["accelerate"], dp, work))
                finally:
                    os.chdir(cwd)
            if "torchrun" in texts and meg and "pretrain_gpt.py" in texts["torchrun"]:
                run("megatron", lambda: meg(texts["torchrun"], world[0] if world else dp))
    for name, args, fmt in REFUSED:
        checks += 1
        cmd = [opts.trainplan] + shlex.split(args) + ["--emit", fmt]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode == 2 and "--emit " + fmt in r.stderr:
            print(f"ok   {name:22} {fmt:10} refused: {r.stderr.strip()[:100]}")
        else:
            failures += 1
            print(f"FAIL {name:22} {fmt:10} expected a refusal (exit 2), got {r.returncode}")
    print(f"{checks} checks run, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
