"""Measurement of one training step of a Hugging Face model on CPU.

Everything recorded here is structural (counts of parameters, FLOPs of the
matrix products, bytes of tensors kept for the backward pass), so the numbers
do not depend on the random values of the weights or the inputs.
"""

from __future__ import annotations

import weakref

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode, register_flop_formula

# --------------------------------------------------------------------------
# FLOP formula for the grouped matrix product used by the Mixture-of-Experts
# "grouped_mm" experts implementation (torch ships none for this operator).
# --------------------------------------------------------------------------
_GROUPED_MM_REGISTERED = False


def _register_grouped_mm_flops() -> None:
    global _GROUPED_MM_REGISTERED
    if _GROUPED_MM_REGISTERED or not hasattr(torch.ops.aten, "_grouped_mm"):
        return

    def grouped_mm_flop(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
        # The contraction dimension is a's last one in every supported layout.
        k = a_shape[-1]
        if len(out_shape) == 2:
            # 2D x 3D (tokens grouped by expert): out [T, N]
            return 2 * out_shape[0] * out_shape[1] * k
        if len(a_shape) == 2 and len(b_shape) == 2:
            # 2D x 2D grouped along the contraction dim (weight gradient):
            # a [M, T], b [T, N] -> out [E, M, N]
            return 2 * a_shape[0] * a_shape[1] * b_shape[1]
        # 3D x 3D batched: out [E, M, N]
        n = 1
        for d in out_shape:
            n *= d
        return 2 * n * k

    try:
        register_flop_formula(torch.ops.aten._grouped_mm)(grouped_mm_flop)
    except Exception:  # already registered by a newer torch
        pass
    _GROUPED_MM_REGISTERED = True


# --------------------------------------------------------------------------
# Dropout as on CUDA
# --------------------------------------------------------------------------
class cuda_style_dropout:
    """Routes torch.nn.functional.dropout through torch.native_dropout.

    On CUDA, at::dropout calls native_dropout, whose backward keeps a bool
    mask (1 byte per element).  On CPU, at::dropout instead multiplies by a
    noise tensor of the input's dtype, which autograd keeps (4 bytes per
    element in float32, 2 in bfloat16).  The planner models GPU training, so
    the oracle uses the CUDA path; the values are the same kind of Bernoulli
    mask, scaled by 1/(1-p).  Only non-inplace dropout with 0 < p < 1 in
    training mode is routed; everything else is left as it is.  Dropout
    inside scaled_dot_product_attention's own kernels is not affected.
    """

    def __enter__(self):
        import torch.nn.functional as F

        self._F = F
        self._orig = F.dropout
        orig = self._orig

        def dropout(input, p=0.5, training=True, inplace=False):
            if training and not inplace and 0.0 < p < 1.0 and isinstance(input, torch.Tensor) \
                    and input.numel() > 0:
                return torch.native_dropout(input, p, True)[0]
            return orig(input, p, training, inplace)

        F.dropout = dropout
        return self

    def __exit__(self, *exc):
        self._F.dropout = self._orig
        return False


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------
def unique_parameters(model: nn.Module) -> list[nn.Parameter]:
    """Parameters deduplicated by storage (tied weights counted once)."""
    seen: set[int] = set()
    out = []
    for p in model.parameters():
        key = p.untyped_storage().data_ptr()
        if key in seen:
            continue
        seen.add(key)
        out.append(p)
    return out


def find_blocks(model: nn.Module) -> list[nn.Module]:
    """The repeated transformer blocks, in execution order.

    Every family used here builds its blocks from transformers'
    GradientCheckpointingLayer; named_modules() lists them in registration
    order (for T5: encoder blocks, then decoder blocks).
    """
    from transformers.modeling_layers import GradientCheckpointingLayer

    blocks = []
    for _, mod in model.named_modules():
        if isinstance(mod, GradientCheckpointingLayer):
            blocks.append(mod)
    # keep only outermost ones (no block nested in another block)
    inner = set()
    for b in blocks:
        for sub in b.modules():
            if sub is not b and sub in blocks:
                inner.add(id(sub))
    return [b for b in blocks if id(b) not in inner]


def _tensors_in(obj):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _tensors_in(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _tensors_in(x)


class SavedTensorTracker:
    """Records the storages that autograd keeps for the backward pass.

    Rules (also in README.md):
      * a tensor whose storage is a parameter's or a buffer's is skipped;
      * each storage is counted once, with untyped_storage().nbytes(), and is
        attributed to the region where it was first saved;
      * only what autograd still holds when forward ends is counted: a tensor
        saved by a branch of the graph that forward already dropped (the top-k
        values a router discards) is freed, and its address may be reused by a
        later saved tensor, which then counts as a storage of its own;
      * regions: the innermost block running; else 'embedding' when inside an
        nn.Embedding or before the first block started; else 'head' once the
        last block has finished; else 'other';
      * a block run under non-reentrant activation checkpointing is charged
        with the tensors it keeps for its recomputation (its tensor positional
        and keyword arguments); the saves made inside it are replaced by
        checkpoint's own placeholders and so are not seen here.
    """

    def __init__(self, model: nn.Module, blocks: list[nn.Module]):
        self.model = model
        self.blocks = blocks
        self.excluded: set[int] = set()
        for p in model.parameters():
            self.excluded.add(p.untyped_storage().data_ptr())
        for b in model.buffers():
            self.excluded.add(b.untyped_storage().data_ptr())
        self.block_stack: list[int] = []
        self.embedding_depth = 0
        self.started = False
        self.finished = 0
        self.seen: dict[int, tuple[str | int, int, weakref.ref]] = {}
        self.detail: list[tuple] = []  # (region, shape, dtype, storage bytes), in save order
        self.handles = []
        self.keep = []  # keeps the checkpoint arguments' storages alive

    # region bookkeeping ---------------------------------------------------
    def _region(self):
        if self.block_stack:
            return self.block_stack[-1]
        if self.embedding_depth > 0 or not self.started:
            return "embedding"
        if self.finished >= len(self.blocks):
            return "head"
        return "other"

    def _record(self, t: torch.Tensor) -> None:
        if not isinstance(t, torch.Tensor) or t.layout != torch.strided:
            return
        if t.device.type == "meta":
            return
        st = t.untyped_storage()
        nbytes = st.nbytes()
        if nbytes == 0:
            return
        ptr = st.data_ptr()
        if ptr in self.excluded:
            return
        if ptr in self.seen and self.seen[ptr][2]() is not None:
            return  # a storage already counted, still held
        region = self._region()
        self.seen[ptr] = (region, nbytes, weakref.ref(t))
        self.detail.append((region, tuple(t.shape), str(t.dtype).replace("torch.", ""), nbytes))

    def install(self) -> None:
        for i, blk in enumerate(self.blocks):
            self.handles.append(blk.register_forward_pre_hook(self._make_pre(i), with_kwargs=True))
            self.handles.append(blk.register_forward_hook(self._make_post(i), always_call=True))
        for mod in self.model.modules():
            if isinstance(mod, nn.Embedding):
                self.handles.append(mod.register_forward_pre_hook(self._emb_pre))
                self.handles.append(mod.register_forward_hook(self._emb_post, always_call=True))

    def remove(self) -> None:
        for h in self.handles:
            h.remove()
        self.handles = []

    def _make_pre(self, i):
        def pre(module, args, kwargs):
            self.started = True
            self.block_stack.append(i)
            checkpointed = (
                getattr(module, "gradient_checkpointing", False)
                and module.training
                and torch.is_grad_enabled()
            )
            if checkpointed:
                for t in list(_tensors_in(args)) + list(_tensors_in(kwargs)):
                    self._record(t)
                    self.keep.append(t)
            return None

        return pre

    def _make_post(self, i):
        def post(module, args, output):
            assert self.block_stack and self.block_stack[-1] == i
            self.block_stack.pop()
            self.finished += 1
            return None

        return post

    def _emb_pre(self, module, args):
        if not self.block_stack:
            self.embedding_depth += 1

    def _emb_post(self, module, args, output):
        if not self.block_stack and self.embedding_depth > 0:
            self.embedding_depth -= 1

    # saved_tensors_hooks ------------------------------------------------
    def pack(self, t):
        self._record(t)
        return t

    @staticmethod
    def unpack(t):
        return t

    # summary -------------------------------------------------------------
    def summary(self) -> dict:
        per_layer = [0] * len(self.blocks)
        emb = head = other = 0
        for region, nbytes, alive in self.seen.values():
            if alive() is None:
                continue  # freed before forward ended
            if isinstance(region, int):
                per_layer[region] += nbytes
            elif region == "embedding":
                emb += nbytes
            elif region == "head":
                head += nbytes
            else:
                other += nbytes
        total = sum(per_layer) + emb + head + other
        return {
            "total": total,
            "per_layer": per_layer,
            "embedding": emb,
            "head": head,
            "other": other,
        }


def measure_step(model: nn.Module, inputs: dict, detail: list | None = None) -> dict:
    """One forward (with loss), one backward, one AdamW step.

    If `detail` is a list, the saved storages are appended to it as
    (region, shape, dtype, bytes) tuples, in the order they were first saved.
    """
    with cuda_style_dropout():
        return _measure_step(model, inputs, detail)


def _measure_step(model: nn.Module, inputs: dict, detail: list | None) -> dict:
    _register_grouped_mm_flops()
    blocks = find_blocks(model)
    if not blocks:
        raise RuntimeError("no transformer blocks found")

    params = unique_parameters(model)
    trainable = [p for p in params if p.requires_grad]
    n_params = sum(p.numel() for p in params)
    n_trainable = sum(p.numel() for p in trainable)

    tracker = SavedTensorTracker(model, blocks)
    tracker.install()
    fwd_counter = FlopCounterMode(display=False)
    try:
        with fwd_counter, torch.autograd.graph.saved_tensors_hooks(tracker.pack, tracker.unpack):
            out = model(**inputs)
            loss = out.loss
    finally:
        tracker.remove()
    if tracker.finished != len(blocks):
        raise RuntimeError(f"ran {tracker.finished} blocks, expected {len(blocks)}")
    saved = tracker.summary()
    if detail is not None:
        detail.extend(tracker.detail)

    bwd_counter = FlopCounterMode(display=False)
    with bwd_counter:
        loss.backward()
    del out, loss
    tracker.keep = []

    grad_bytes = 0
    for p in trainable:
        if p.grad is not None:
            grad_bytes += p.grad.nbytes

    opt = torch.optim.AdamW(trainable, lr=1e-4, foreach=False)
    opt.step()
    opt_bytes = 0
    for state in opt.state.values():
        for k, v in state.items():
            if k == "step":
                continue
            if isinstance(v, torch.Tensor):
                opt_bytes += v.nbytes

    return {
        "parameters": n_params,
        "trainable_parameters": n_trainable,
        "flops": {
            "forward": int(fwd_counter.get_total_flops()),
            "backward": int(bwd_counter.get_total_flops()),
        },
        "saved_for_backward_bytes": saved,
        "gradient_bytes": grad_bytes,
        "optimizer_state_bytes": opt_bytes,
    }
