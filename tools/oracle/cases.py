"""The oracle's cases: small random-init models of each family and one training setting each."""

from __future__ import annotations

from dataclasses import dataclass, field

# What the two DeepSeek cases share: 4 routed experts top-2 of width 64, the first of 3 layers dense
# (width 256), a key/value latent of 32, query/key heads of 32 + 16 rotary dims, value heads of 32.
_DEEPSEEK = dict(
    vocab_size=1024, hidden_size=128, intermediate_size=256, moe_intermediate_size=64, n_routed_experts=4,
    num_experts_per_tok=2, first_k_dense_replace=1, num_hidden_layers=3, num_attention_heads=4,
    num_key_value_heads=4, kv_lora_rank=32, qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=32,
    max_position_embeddings=1024,
)

# Architecture of each family, small: 2-4 layers, hidden 64-256, 4-8 heads.
# Keys are the Hugging Face config keys of that model_type.
FAMILIES: dict[str, dict] = {
    # Llama with grouped-query attention (8 query heads, 2 key/value heads).
    "llama-gqa": dict(
        model_type="llama", vocab_size=1024, hidden_size=128, intermediate_size=352,
        num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2,
        max_position_embeddings=512,
    ),
    # Llama with multi-head attention and tied embeddings.
    # Llama with four blocks: partial fine-tuning's trained, frozen and no-backward layers.
    "llama-gqa-4l": dict(
        model_type="llama", vocab_size=1024, hidden_size=128, intermediate_size=352,
        num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
        max_position_embeddings=512,
    ),
    "llama-mha-tied": dict(
        model_type="llama", vocab_size=2048, hidden_size=256, intermediate_size=688,
        num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=4,
        max_position_embeddings=512, tie_word_embeddings=True,
    ),
    # Llama with attention dropout (eager materialises the dropout mask).
    "llama-gqa-adrop": dict(
        model_type="llama", vocab_size=1024, hidden_size=128, intermediate_size=352,
        num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2,
        max_position_embeddings=512, attention_dropout=0.1,
    ),
    "mistral-gqa": dict(
        model_type="mistral", vocab_size=2000, hidden_size=128, intermediate_size=448,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=1024, sliding_window=4096,
    ),
    # Sliding window shorter than the sequence: the mask is no longer plain causal.
    "mistral-swa64": dict(
        model_type="mistral", vocab_size=2000, hidden_size=128, intermediate_size=448,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=1024, sliding_window=64,
    ),
    "mixtral-e4k2": dict(
        model_type="mixtral", vocab_size=1500, hidden_size=128, intermediate_size=256,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        num_local_experts=4, num_experts_per_tok=2, max_position_embeddings=1024,
    ),
    # Qwen2: biases on q/k/v.
    "qwen2-gqa": dict(
        model_type="qwen2", vocab_size=3000, hidden_size=192, intermediate_size=512,
        num_hidden_layers=2, num_attention_heads=6, num_key_value_heads=2,
        max_position_embeddings=1024,
    ),
    # Gemma: multi-query, head_dim set independently, tied embeddings, GeGLU.
    "gemma-mqa": dict(
        model_type="gemma", vocab_size=2048, hidden_size=128, intermediate_size=512,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1, head_dim=32,
        max_position_embeddings=1024,
    ),
    # Falcon-40B/180B style: new_decoder_architecture, grouped kv, two parallel norms.
    "falcon-new": dict(
        model_type="falcon", vocab_size=1024, hidden_size=128, num_hidden_layers=2,
        num_attention_heads=8, num_kv_heads=2, new_decoder_architecture=True,
        multi_query=True, parallel_attn=True, bias=False, alibi=False,
        max_position_embeddings=1024,
    ),
    # Falcon-7B style: multi_query + parallel_attn, one shared norm.
    "falcon-mqa": dict(
        model_type="falcon", vocab_size=1024, hidden_size=128, num_hidden_layers=2,
        num_attention_heads=4, new_decoder_architecture=False, multi_query=True,
        parallel_attn=True, bias=False, alibi=False, max_position_embeddings=1024,
    ),
    "bloom": dict(
        model_type="bloom", vocab_size=1024, hidden_size=128, n_layer=2, n_head=4,
    ),
    # GPT-2 keeps its default dropouts (0.1 on embeddings, attention, residual).
    "gpt2": dict(
        model_type="gpt2", vocab_size=1024, n_embd=128, n_layer=2, n_head=4, n_positions=512,
    ),
    # GPT-2 with attention dropout off (embedding and residual dropout stay 0.1):
    # with attention dropout, CPU scaled_dot_product_attention falls back to its
    # math path, unlike the fused CUDA kernels, so sdpa cases turn it off.
    "gpt2-adrop0": dict(
        model_type="gpt2", vocab_size=1024, n_embd=128, n_layer=2, n_head=4, n_positions=512,
        attn_pdrop=0.0,
    ),
    # GPT-NeoX: parallel residual, rotary on 25 % of the head dims.
    "gpt_neox": dict(
        model_type="gpt_neox", vocab_size=1024, hidden_size=128, intermediate_size=512,
        num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=512,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25},
    ),
    # Phi(-2): parallel attention/MLP, partial rotary.
    "phi": dict(
        model_type="phi", vocab_size=1024, hidden_size=128, intermediate_size=512,
        num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=512,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5},
    ),
    # T5 v1.0 style (ReLU FF), dropout 0.1, 2 encoder + 2 decoder blocks.
    "t5": dict(
        model_type="t5", vocab_size=1024, d_model=128, d_kv=32, d_ff=512, num_layers=2,
        num_decoder_layers=2, num_heads=4, decoder_start_token_id=0,
    ),
    # T5 v1.1 style (gated GELU FF), untied head, no dropout (see gpt2-adrop0).
    "t5-gated": dict(
        model_type="t5", vocab_size=1024, d_model=128, d_kv=32, d_ff=320, num_layers=2,
        num_decoder_layers=2, num_heads=4, feed_forward_proj="gated-gelu",
        tie_word_embeddings=False, dropout_rate=0.0, decoder_start_token_id=0,
    ),
    "mpt": dict(
        model_type="mpt", vocab_size=1024, d_model=128, n_heads=4, n_layers=2, max_seq_len=512,
    ),
    # Qwen3: RMSNorm of q and k over each head, head_dim set apart from hidden / heads.
    "qwen3-gqa": dict(
        model_type="qwen3", vocab_size=1024, hidden_size=128, intermediate_size=352,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=48,
        max_position_embeddings=1024,
    ),
    # Qwen3-MoE: 4 experts, top-2, every layer sparse.
    "qwen3_moe-e4k2": dict(
        model_type="qwen3_moe", vocab_size=1024, hidden_size=128, intermediate_size=256,
        moe_intermediate_size=96, num_experts=4, num_experts_per_tok=2, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=1024,
    ),
    # OLMo 2: q/k RMSNorm over the whole projection, norms after attention and MLP.
    "olmo2": dict(
        model_type="olmo2", vocab_size=1024, hidden_size=128, intermediate_size=352, pad_token_id=0,
        num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=1024,
    ),
    # Phi-3: fused qkv_proj and gate_up_proj.
    "phi3-gqa": dict(
        model_type="phi3", vocab_size=1024, hidden_size=128, intermediate_size=352, pad_token_id=0,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=1024,
    ),
    # Gemma 2: four norms a block, scores and logits soft-capped, a window on every other layer
    # (no SDPA path: softcapping).
    "gemma2": dict(
        model_type="gemma2", vocab_size=2048, hidden_size=128, intermediate_size=512,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
        sliding_window=64, max_position_embeddings=1024,
    ),
    # Gemma 3 (text): four norms, q/k RMSNorm per head, five of six layers windowed.
    "gemma3_text": dict(
        model_type="gemma3_text", vocab_size=2048, hidden_size=128, intermediate_size=512,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1, head_dim=32,
        sliding_window=64, max_position_embeddings=1024,
    ),
    # Llama 4 (text): 4 experts that run every token, top-1 routing, a shared expert, L2 norm of q
    # and k on the rotary layers, the fourth layer without rotary positions (NoPE), chunked
    # attention on the others.
    "llama4_text-e4k1": dict(
        model_type="llama4_text", vocab_size=1024, hidden_size=128, intermediate_size=96,
        intermediate_size_mlp=256, num_local_experts=4, num_experts_per_tok=1, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, attention_chunk_size=64,
        max_position_embeddings=1024,
    ),
    # gpt-oss: 4 experts, top-2, with biases; router bias; attention sinks; alternate windows
    # (no SDPA path: sinks).
    "gpt_oss-e4k2": dict(
        model_type="gpt_oss", vocab_size=1024, hidden_size=128, intermediate_size=96,
        num_local_experts=4, num_experts_per_tok=2, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=32, sliding_window=64, max_position_embeddings=1024,
    ),
    # DeepSeek-V3: multi-head latent attention (a query compression, a key/value latent, rotary
    # dims apart, value heads narrower than query/key heads), 4 routed experts top-2 in 2 groups
    # (sigmoid scores, group-limited), a shared expert, the first layer dense.
    "deepseek_v3-e4k2": dict(
        _DEEPSEEK, model_type="deepseek_v3", n_shared_experts=1, n_group=2, topk_group=1, q_lora_rank=48,
    ),
    # DeepSeek-V2-Lite style: no query compression (q_proj), softmax routing (greedy top-k), two
    # shared experts, the first layer dense.
    "deepseek_v2-e4k2": dict(_DEEPSEEK, model_type="deepseek_v2", n_shared_experts=2, q_lora_rank=None),
}
# Llama 4 (text) as Maverick interleaves it: experts on every other layer (the second of each pair),
# dense MLPs of intermediate_size_mlp on the others.
FAMILIES["llama4_text-e4k1-step2"] = dict(FAMILIES["llama4_text-e4k1"], interleave_moe_layer_step=2)
# Qwen3-MoE with its first layer dense (mlp_only_layers), three layers.
FAMILIES["qwen3_moe-e4k2-dense0"] = dict(FAMILIES["qwen3_moe-e4k2"], num_hidden_layers=3, mlp_only_layers=[0])

# q,v-style LoRA targets per model_type.
QV_TARGETS: dict[str, list[str]] = {
    "llama": ["q_proj", "v_proj"],
    "mistral": ["q_proj", "v_proj"],
    "mixtral": ["q_proj", "v_proj"],
    "qwen2": ["q_proj", "v_proj"],
    "gemma": ["q_proj", "v_proj"],
    "phi": ["q_proj", "v_proj"],
    "falcon": ["query_key_value"],
    "bloom": ["query_key_value"],
    "gpt_neox": ["query_key_value"],
    "gpt2": ["c_attn"],
    "t5": ["q", "v"],
    "mpt": ["Wqkv"],
    "qwen3": ["q_proj", "v_proj"],
    "qwen3_moe": ["q_proj", "v_proj"],
    "olmo2": ["q_proj", "v_proj"],
    "phi3": ["qkv_proj"],
    "gemma2": ["q_proj", "v_proj"],
    "gemma3_text": ["q_proj", "v_proj"],
    "gpt_oss": ["q_proj", "v_proj"],
    "llama4_text": ["q_proj", "v_proj"],
    "deepseek_v3": ["q_b_proj", "kv_b_proj"],
    "deepseek_v2": ["q_proj", "kv_b_proj"],
}


@dataclass(frozen=True)
class Case:
    family: str
    attention: str  # "eager" | "sdpa"
    seq: int
    micro_batch: int
    dtype: str  # "float32" | "bfloat16"
    checkpointing: str = "none"  # "none" | "full"
    lora: str | None = None  # None | "qv8" | "all16"
    experts: str | None = None  # MoE experts implementation, for mixtral
    # Partial fine-tuning: the weights that train, in trainplan's --trainable form (layers N or
    # A-B, embedding, head, and what of those layers: all, attention, mlp, norms or roles); every
    # other parameter gets requires_grad False (run.py freeze_except).
    trainable: str | None = None
    extra: dict = field(default_factory=dict, hash=False, compare=False)

    @property
    def name(self) -> str:
        parts = [self.family]
        if self.experts:
            parts.append("experts_" + self.experts.replace("_", ""))
        parts += [self.attention, f"s{self.seq}", f"b{self.micro_batch}",
                  "fp32" if self.dtype == "float32" else "bf16"]
        if self.checkpointing == "full":
            parts.append("ckpt")
        if self.lora == "qv8":
            parts.append("lora8qv")
        elif self.lora == "all16":
            parts.append("lora16all")
        if self.trainable:
            parts.append("part" + self.trainable.replace(",", "_").replace("-", "to"))
        return "-".join(parts)

    @property
    def model_type(self) -> str:
        return FAMILIES[self.family]["model_type"]

    def lora_record(self):
        if self.lora is None:
            return None
        if self.lora == "qv8":
            return {"rank": 8, "alpha": 16, "targets": list(QV_TARGETS[self.model_type])}
        if self.lora == "all16":
            return {"rank": 16, "alpha": 32, "targets": "all-linear"}
        raise ValueError(self.lora)


F32, BF16 = "float32", "bfloat16"

CASES: list[Case] = [
    # llama: the hand-checked case first, then one knob changed at a time
    Case("llama-gqa", "eager", 128, 2, F32),
    Case("llama-gqa", "sdpa", 128, 2, F32),
    Case("llama-gqa", "sdpa", 256, 1, BF16),
    Case("llama-gqa", "eager", 128, 2, BF16),
    Case("llama-gqa", "sdpa", 128, 2, F32, checkpointing="full"),
    Case("llama-gqa", "sdpa", 128, 2, BF16, lora="qv8"),
    Case("llama-gqa", "sdpa", 128, 2, BF16, lora="all16"),
    Case("llama-gqa", "sdpa", 128, 2, BF16, checkpointing="full", lora="qv8"),
    Case("llama-mha-tied", "sdpa", 64, 4, BF16),
    Case("llama-gqa-adrop", "eager", 128, 2, F32),
    # mistral
    Case("mistral-gqa", "sdpa", 256, 2, BF16),
    Case("mistral-swa64", "eager", 128, 1, F32),
    Case("mistral-swa64", "sdpa", 128, 1, F32),
    # mixtral
    Case("mixtral-e4k2", "sdpa", 128, 2, F32, experts="eager"),
    Case("mixtral-e4k2", "sdpa", 128, 2, BF16, experts="grouped_mm"),
    # qwen2
    Case("qwen2-gqa", "sdpa", 256, 2, BF16),
    Case("qwen2-gqa", "eager", 64, 4, F32, checkpointing="full"),
    # gemma
    Case("gemma-mqa", "sdpa", 128, 2, BF16),
    Case("gemma-mqa", "eager", 128, 1, F32),
    # falcon
    Case("falcon-new", "sdpa", 128, 2, BF16),
    Case("falcon-new", "eager", 128, 2, F32),
    Case("falcon-mqa", "eager", 128, 2, F32),
    Case("falcon-mqa", "sdpa", 256, 1, F32, checkpointing="full"),
    # bloom (eager attention only)
    Case("bloom", "eager", 128, 2, F32),
    Case("bloom", "eager", 128, 2, BF16, lora="qv8"),
    # gpt2
    Case("gpt2", "eager", 128, 2, F32),
    Case("gpt2", "eager", 128, 2, BF16, checkpointing="full"),
    Case("gpt2-adrop0", "sdpa", 256, 1, BF16),
    Case("gpt2-adrop0", "sdpa", 128, 2, F32, checkpointing="full"),
    # gpt_neox
    Case("gpt_neox", "sdpa", 128, 2, F32),
    Case("gpt_neox", "eager", 64, 4, BF16, lora="all16"),
    # phi
    Case("phi", "sdpa", 128, 2, F32),
    Case("phi", "eager", 128, 2, BF16, lora="all16"),
    # t5
    Case("t5", "eager", 128, 2, F32),
    Case("t5", "eager", 128, 2, BF16, lora="qv8"),
    # (no T5 sdpa case: with a learned relative bias that needs a gradient, CPU
    # scaled_dot_product_attention takes its math path, unlike CUDA's kernels)
    Case("t5-gated", "eager", 64, 4, F32),
    # mpt (eager attention only)
    Case("mpt", "eager", 128, 2, F32),
    # rules first seen in one case above, checked in another setting
    Case("llama-gqa", "eager", 128, 2, BF16, lora="qv8"),  # eager Q K^T in the first adapted block
    Case("gpt2-adrop0", "sdpa", 128, 2, F32),  # SDPA output read by c_proj without a copy
    Case("phi", "sdpa", 128, 2, BF16),  # partial rotary's copy, LayerNorm statistics in bf16
    Case("t5", "eager", 64, 2, BF16),  # T5 norms in bf16, relative buckets under full training
    # the 2025 families
    Case("qwen3-gqa", "sdpa", 128, 2, BF16),
    Case("qwen3-gqa", "eager", 128, 2, F32),
    Case("qwen3-gqa", "sdpa", 128, 2, BF16, lora="all16"),
    Case("qwen3_moe-e4k2", "sdpa", 128, 2, BF16, experts="grouped_mm"),
    Case("qwen3_moe-e4k2", "sdpa", 128, 2, F32, experts="eager"),
    Case("olmo2", "sdpa", 128, 2, BF16),
    Case("olmo2", "eager", 64, 2, F32),
    Case("phi3-gqa", "sdpa", 128, 2, BF16),
    Case("phi3-gqa", "sdpa", 128, 2, BF16, lora="all16"),
    Case("gemma2", "eager", 128, 2, BF16),
    Case("gemma2", "eager", 64, 2, F32),
    Case("gemma3_text", "sdpa", 128, 2, BF16),
    Case("gemma3_text", "eager", 64, 2, F32),
    Case("gpt_oss-e4k2", "eager", 128, 2, BF16, experts="grouped_mm"),
    Case("gpt_oss-e4k2", "eager", 64, 2, F32, experts="eager"),
    Case("llama4_text-e4k1", "sdpa", 128, 2, BF16),
    Case("llama4_text-e4k1", "eager", 64, 2, F32),
    Case("llama4_text-e4k1-step2", "sdpa", 128, 2, BF16),
    Case("qwen3_moe-e4k2-dense0", "sdpa", 128, 2, BF16, experts="grouped_mm"),
    Case("deepseek_v3-e4k2", "sdpa", 128, 2, BF16, experts="grouped_mm"),
    Case("deepseek_v3-e4k2", "eager", 64, 2, F32, experts="eager"),
    Case("deepseek_v3-e4k2", "sdpa", 128, 2, BF16, lora="qv8", experts="grouped_mm"),
    Case("deepseek_v2-e4k2", "sdpa", 128, 2, BF16, experts="grouped_mm"),
    Case("deepseek_v2-e4k2", "eager", 64, 2, F32, experts="eager"),
    # partial fine-tuning: the last blocks (LLaMA-Factory's freeze), a part of one block with the
    # head above frozen blocks, the embedding (every block needs its input gradient), MoE experts
    Case("llama-gqa-4l", "sdpa", 128, 2, F32, trainable="2-3"),
    Case("llama-gqa-4l", "eager", 128, 2, BF16, trainable="2-3"),
    Case("llama-gqa-4l", "sdpa", 128, 2, F32, checkpointing="full", trainable="2-3"),
    Case("llama-gqa-4l", "sdpa", 128, 2, F32, trainable="1,mlp,head"),
    Case("llama-gqa-4l", "sdpa", 64, 2, BF16, trainable="3,attention,embedding"),
    Case("mixtral-e4k2", "sdpa", 128, 2, F32, experts="eager", trainable="1,router,gate,up,down,embedding,head"),
]
