"""A decode path for Llama-family models with a preallocated KV cache.

`transformers`' `DynamicCache` grows by `torch.cat` every step (quadratic copying) and every
call rebuilds masks and walks a deep module stack; for small models that overhead is most
of the time. This path reuses the model's own modules and weights (so `update_weights` and
the trainer's in-place updates apply), writes K/V into fixed buffers, and builds one
boolean mask per step. Supported: `llama` and `qwen2` configs (RoPE via the model's own
rotary module, GQA, q/k/v biases), peft-wrapped too (LoRA layers are called as modules, so the
adapters apply); anything else uses the generic `DynamicCache` path.
`tests/rollout/test_torch_engine.py` checks its log-probs against a plain HF forward pass.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

SUPPORTED = ("llama", "qwen2")


def hf_model(model: Any) -> Any:
    """The transformers model under a peft wrapper (its LoRA layers are injected in place, so calling its
    modules applies the adapters), else `model` itself."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def supports(model: Any) -> bool:
    model = hf_model(model)
    cfg = getattr(model, "config", None)
    if cfg is None or getattr(cfg, "model_type", "") not in SUPPORTED:
        return False
    if getattr(cfg, "use_sliding_window", False):
        return False
    inner = getattr(model, "model", None)
    return inner is not None and hasattr(inner, "rotary_emb") and hasattr(model, "lm_head")


def _rms(norm: Any, x: torch.Tensor) -> torch.Tensor:
    """The HF RMSNorm module's math in one fused call (float32 inside, like Llama/Qwen2 RMSNorm)."""
    eps = getattr(norm, "variance_epsilon", None)
    if eps is None or not hasattr(F, "rms_norm"):
        return norm(x)
    y = F.rms_norm(x.float(), (x.shape[-1],), eps=eps)
    return norm.weight * y.to(x.dtype)


class KVDecoder:
    """Prefill then one-token steps for a batch, with K/V in preallocated buffers."""

    def __init__(self, model: Any, batch: int, max_len: int, device: torch.device) -> None:
        # heavy: loaded only when the fast decode path is used
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

        self._rope = apply_rotary_pos_emb
        model = hf_model(model)
        cfg = model.config
        inner = model.model
        self.embed, self.layers, self.norm = inner.embed_tokens, inner.layers, inner.norm
        self.rotary, self.lm_head = inner.rotary_emb, model.lm_head
        self.n_heads = cfg.num_attention_heads
        self.n_kv = getattr(cfg, "num_key_value_heads", None) or self.n_heads
        self.hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // self.n_heads
        dtype = self.embed.weight.dtype
        shape = (len(self.layers), batch, self.n_kv, max_len, self.hd)
        self.k = torch.empty(shape, dtype=dtype, device=device)
        self.v = torch.empty(shape, dtype=dtype, device=device)
        self.length = 0

    def select(self, idx: torch.Tensor) -> None:
        """Keep only batch rows `idx` (finished rows leave the batch)."""
        self.k = self.k[:, idx]
        self.v = self.v[:, idx]

    def forward(self, ids: torch.Tensor, pos: torch.Tensor, key_mask: torch.Tensor) -> torch.Tensor:
        """Logits of the last position. `key_mask` [B, length+T] marks real (non-pad) tokens."""
        b, t = ids.shape
        start, end = self.length, self.length + t
        x = self.embed(ids)
        cos, sin = self.rotary(x, pos)
        allowed = key_mask[:, None, None, :end].bool()
        if t > 1:  # causal within the new block; a pad query may see itself (avoids all-masked NaN rows)
            q_at = torch.arange(start, end, device=ids.device)[:, None]
            k_at = torch.arange(end, device=ids.device)[None, :]
            allowed = (allowed & (k_at <= q_at)) | (k_at == q_at)
        for i, layer in enumerate(self.layers):
            attn = layer.self_attn
            h = _rms(layer.input_layernorm, x)
            q = attn.q_proj(h).view(b, t, -1, self.hd).transpose(1, 2)
            k = attn.k_proj(h).view(b, t, -1, self.hd).transpose(1, 2)
            v = attn.v_proj(h).view(b, t, -1, self.hd).transpose(1, 2)
            q, k = self._rope(q, k, cos, sin)
            self.k[i, :, :, start:end] = k
            self.v[i, :, :, start:end] = v
            o = F.scaled_dot_product_attention(
                q, self.k[i, :, :, :end], self.v[i, :, :, :end], attn_mask=allowed,
                scale=getattr(attn, "scaling", None), enable_gqa=self.n_kv != self.n_heads,
            )
            x = x + attn.o_proj(o.transpose(1, 2).reshape(b, t, -1))
            x = x + layer.mlp(_rms(layer.post_attention_layernorm, x))
        self.length = end
        return self.lm_head(_rms(self.norm, x[:, -1]))
