"""A tiny random llama, written as GGUF exactly as llama.cpp would write it.

It goes through the very conversion and streaming code the real model uses,
so CI exercises GGUF reading, dequantisation, the rotary layout, tokenizer
reconstruction, the chat template and CTranslate2 streaming without any
download. `reference_logits` is an independent numpy forward pass in the
Hugging Face layout (halves rotation), the ground truth for the layout test.

Built in well under a second: 2 layers, hidden 64, 4 heads over 2 KV heads,
259 byte-level tokens plus a few merges. The output matrix is untied and
scaled up so greedy choices have wide margins (int8 rounding cannot flip
them) and a random model does not just echo its input.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from streamfn.local._convert import convert_gguf
from streamfn.local._tokens import byte_level_alphabet

Array = npt.NDArray[np.float64]

CONTROL: Final = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
TEMPLATE: Final = (
    "{% for message in messages %}"
    "{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are tiny.<|im_end|>\\n' }}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
MERGE_TEXT: Final = "the cat sat on the mat and the hat; then the rat ate the oat"


@dataclass
class TinyLlama:
    layers: int = 2
    hidden: int = 64
    heads: int = 4
    kv_heads: int = 2
    ffn: int = 128
    rope_base: float = 10000.0
    eps: float = 1e-5
    seed: int = 1234
    tokens: list[str] = field(default_factory=list)
    merges: list[str] = field(default_factory=list)
    weights: dict[str, Array] = field(default_factory=dict)

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


def _byte_level(text: str) -> str:
    table = {b: ch for ch, b in byte_level_alphabet().items()}
    return "".join(table[b] for b in text.encode())


def _vocabulary(merge_count: int) -> tuple[list[str], list[str]]:
    """Control tokens, the 256 byte symbols, then greedy BPE merges learnt on MERGE_TEXT."""
    byte_symbols = sorted(byte_level_alphabet(), key=lambda ch: byte_level_alphabet()[ch])
    tokens = [*CONTROL, *byte_symbols]
    words = [list(_byte_level(w)) for w in MERGE_TEXT.replace(" ", " Ġ").split(" ")]
    merges: list[str] = []
    for _ in range(merge_count):
        counts: dict[tuple[str, str], int] = {}
        for word in words:
            for pair in itertools.pairwise(word):
                counts[pair] = counts.get(pair, 0) + 1
        if not counts:
            break
        best = max(counts, key=lambda p: (counts[p], p))
        merges.append(f"{best[0]} {best[1]}")
        tokens.append(best[0] + best[1])
        for word in words:
            i = 0
            while i < len(word) - 1:
                if (word[i], word[i + 1]) == best:
                    word[i : i + 2] = [best[0] + best[1]]
                i += 1
    return tokens, merges


def make_tiny_llama(seed: int = 1234, merge_count: int = 12) -> TinyLlama:
    model = TinyLlama(seed=seed)
    model.tokens, model.merges = _vocabulary(merge_count)
    rng = np.random.default_rng(seed)
    h, f, v = model.hidden, model.ffn, len(model.tokens)
    kv = model.kv_heads * model.head_dim

    def mat(out: int, inp: int, scale: float) -> Array:
        return rng.normal(0.0, scale / np.sqrt(inp), size=(out, inp))

    w = model.weights
    w["token_embd.weight"] = rng.normal(0.0, 1.0, size=(v, h))
    w["output_norm.weight"] = 1.0 + 0.1 * rng.normal(size=h)
    w["output.weight"] = mat(v, h, 6.0)
    for i in range(model.layers):
        p = f"blk.{i}."
        w[p + "attn_norm.weight"] = 1.0 + 0.1 * rng.normal(size=h)
        w[p + "attn_q.weight"] = mat(h, h, 2.0)
        w[p + "attn_k.weight"] = mat(kv, h, 2.0)
        w[p + "attn_v.weight"] = mat(kv, h, 1.0)
        w[p + "attn_output.weight"] = mat(h, h, 1.0)
        w[p + "ffn_norm.weight"] = 1.0 + 0.1 * rng.normal(size=h)
        w[p + "ffn_gate.weight"] = mat(f, h, 1.0)
        w[p + "ffn_up.weight"] = mat(f, h, 1.0)
        w[p + "ffn_down.weight"] = mat(h, f, 1.0)
    for name in w:  # the reference sees exactly what the GGUF stores (float32)
        w[name] = w[name].astype(np.float32).astype(np.float64)
    return model


def llama_cpp_permute(weight: Array, heads: int) -> Array:
    """What llama.cpp's converter does to Q/K rows (halves -> interleaved pairs)."""
    out = weight.shape[0]
    return weight.reshape(heads, 2, out // heads // 2, -1).swapaxes(1, 2).reshape(weight.shape)


def write_gguf(model: TinyLlama, path: Path) -> Path:
    import gguf

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny llama")
    writer.add_block_count(model.layers)
    writer.add_context_length(256)
    writer.add_embedding_length(model.hidden)
    writer.add_feed_forward_length(model.ffn)
    writer.add_head_count(model.heads)
    writer.add_head_count_kv(model.kv_heads)
    writer.add_rope_freq_base(model.rope_base)
    writer.add_rope_dimension_count(model.head_dim)
    writer.add_layer_norm_rms_eps(model.eps)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("smollm")
    writer.add_token_list(model.tokens)
    writer.add_token_types([3 if t in CONTROL else 1 for t in model.tokens])
    writer.add_token_merges(model.merges)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_chat_template(TEMPLATE)
    for name, value in model.weights.items():
        if name.endswith("attn_q.weight"):
            value = llama_cpp_permute(value, model.heads)
        elif name.endswith("attn_k.weight"):
            value = llama_cpp_permute(value, model.kv_heads)
        writer.add_tensor(name, value.astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def build_tiny_model(directory: Path, *, quantization: str = "int8") -> Path:
    """GGUF then conversion through `streamfn.local._convert`; returns the model directory."""
    directory.mkdir(parents=True, exist_ok=True)
    gguf_path = write_gguf(make_tiny_llama(), directory / "tiny.gguf")
    return convert_gguf(gguf_path, directory / f"tiny-{quantization}", quantization=quantization)


# -- numpy reference (Hugging Face layout) -----------------------------------


def _rms(x: Array, gamma: Array, eps: float) -> Array:
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * gamma


def _rotate_halves(x: Array, base: float) -> Array:
    t, _, d = x.shape
    inv = 1.0 / base ** (np.arange(0, d, 2) / d)
    angles = np.arange(t)[:, None] * inv[None, :]
    cos = np.concatenate([np.cos(angles)] * 2, -1)[:, None, :]
    sin = np.concatenate([np.sin(angles)] * 2, -1)[:, None, :]
    rotated = np.concatenate([-x[..., d // 2 :], x[..., : d // 2]], -1)
    return x * cos + rotated * sin


def reference_logits(model: TinyLlama, ids: list[int]) -> Array:
    """Logits for every position of ``ids`` (float64, no cache: it is a reference)."""
    w, t = model.weights, len(ids)
    x = w["token_embd.weight"][ids]
    mask = np.triu(np.full((t, t), -np.inf), 1)
    hd, groups = model.head_dim, model.heads // model.kv_heads
    for i in range(model.layers):
        p = f"blk.{i}."
        h = _rms(x, w[p + "attn_norm.weight"], model.eps)
        q = _rotate_halves(
            (h @ w[p + "attn_q.weight"].T).reshape(t, model.heads, hd), model.rope_base
        )
        k = _rotate_halves(
            (h @ w[p + "attn_k.weight"].T).reshape(t, model.kv_heads, hd), model.rope_base
        )
        v = (h @ w[p + "attn_v.weight"].T).reshape(t, model.kv_heads, hd)
        k, v = np.repeat(k, groups, 1), np.repeat(v, groups, 1)
        scores = np.einsum("thd,shd->hts", q, k) / np.sqrt(hd) + mask
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        x = x + np.einsum("hts,shd->thd", scores, v).reshape(t, -1) @ w[p + "attn_output.weight"].T
        h = _rms(x, w[p + "ffn_norm.weight"], model.eps)
        gate, up = h @ w[p + "ffn_gate.weight"].T, h @ w[p + "ffn_up.weight"].T
        x = x + (gate / (1.0 + np.exp(-gate)) * up) @ w[p + "ffn_down.weight"].T
    return np.asarray(_rms(x, w["output_norm.weight"], model.eps) @ w["output.weight"].T)


def reference_greedy(model: TinyLlama, prompt: list[int], steps: int) -> list[int]:
    ids = list(prompt)
    for _ in range(steps):
        ids.append(int(reference_logits(model, ids)[-1].argmax()))
    return ids[len(prompt) :]
