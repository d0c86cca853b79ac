"""GGUF (llama architecture) -> a CTranslate2 model directory that `LocalModel` loads.

Why convert instead of running the GGUF: CTranslate2's int8 CPU kernels stream
tokens fast with one thread and no native build step, while the GGUF is what
is actually distributed. The conversion happens once per machine and writes:

- the CTranslate2 files (``model.bin``, ``config.json``, ``vocabulary.json``);
- ``tokenizer.json``: byte-level BPE rebuilt from the GGUF vocabulary and merges;
- ``chat_template.jinja``: the template stored in the GGUF metadata;
- ``streamfn.json``: where the model came from and which tokens end a turn.

The output appears atomically: everything is written into a temporary sibling
directory that is renamed into place last, so an interrupted conversion never
leaves a half model that a later run would trust.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from streamfn.core import StreamfnError

from ._cache import (
    METADATA_FILE,
    TEMPLATE_FILE,
    TOKENIZER_FILE,
    WEIGHTS_FILE,
    Progress,
    file_record,
    no_progress,
)

__all__ = [
    "METADATA_FILE",
    "TEMPLATE_FILE",
    "TOKENIZER_FILE",
    "ConversionError",
    "GGUFConfig",
    "Progress",
    "convert_gguf",
    "no_progress",
    "read_config",
]

#: GGUF token types (llama.cpp's ``LLAMA_TOKEN_TYPE_*``) that are never split by the tokenizer.
_CONTROL: Final = 3
_USER_DEFINED: Final = 4
#: token strings that end an assistant turn when present in the vocabulary
_TURN_END_TOKENS: Final = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<end_of_turn>")

FloatArray = npt.NDArray[np.float32]


class ConversionError(StreamfnError):
    """The GGUF cannot be converted (unsupported architecture or tensor type)."""


@dataclass(frozen=True, slots=True)
class GGUFConfig:
    """The llama hyper-parameters the CTranslate2 spec needs, read from GGUF metadata."""

    name: str
    num_layers: int
    hidden: int
    ffn: int
    num_heads: int
    num_heads_kv: int
    rope_base: float
    rope_dims: int
    rms_eps: float
    context_length: int

    @property
    def head_dim(self) -> int:
        return self.hidden // self.num_heads


def _field(reader: Any, key: str, default: Any = None) -> Any:
    field = reader.fields.get(key)
    if field is None:
        if default is None:
            raise ConversionError(f"GGUF metadata lacks {key!r}")
        return default
    return field.contents()


def read_config(reader: Any) -> GGUFConfig:
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise ConversionError(f"only llama-architecture GGUF files are supported, not {arch!r}")
    heads = int(_field(reader, "llama.attention.head_count"))
    hidden = int(_field(reader, "llama.embedding_length"))
    return GGUFConfig(
        name=str(_field(reader, "general.name", "gguf model")),
        num_layers=int(_field(reader, "llama.block_count")),
        hidden=hidden,
        ffn=int(_field(reader, "llama.feed_forward_length")),
        num_heads=heads,
        num_heads_kv=int(_field(reader, "llama.attention.head_count_kv", heads)),
        rope_base=float(_field(reader, "llama.rope.freq_base", 10000.0)),
        rope_dims=int(_field(reader, "llama.rope.dimension_count", hidden // heads)),
        rms_eps=float(_field(reader, "llama.attention.layer_norm_rms_epsilon", 1e-5)),
        context_length=int(_field(reader, "llama.context_length", 2048)),
    )


class _Tensors:
    """Dequantised tensors by GGUF name, as float32 ``[out, in]`` arrays."""

    def __init__(self, reader: Any) -> None:
        from gguf.quants import dequantize

        self._dequantize = dequantize
        self._by_name = {t.name: t for t in reader.tensors}

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def __len__(self) -> int:
        return len(self._by_name)

    def get(self, name: str) -> FloatArray:
        try:
            tensor = self._by_name[name]
        except KeyError:
            raise ConversionError(f"GGUF lacks tensor {name!r}") from None
        try:
            values = self._dequantize(tensor.data, tensor.tensor_type)
        except NotImplementedError as exc:
            raise ConversionError(
                f"tensor {name!r} uses {tensor.tensor_type.name}, which cannot be dequantised: {exc}"
            ) from None
        # GGUF lists dimensions input-first; numpy wants [out, in].
        shape = tuple(int(d) for d in reversed(tensor.shape))
        # A copy: F32 tensors come back as read-only views of the memory-mapped file.
        return np.array(values, dtype=np.float32, copy=True).reshape(shape)


def _build_spec(config: GGUFConfig, tensors: _Tensors, progress: Progress) -> Any:
    import ctranslate2.specs as specs
    from ctranslate2.specs import common_spec

    if config.rope_dims != config.head_dim:
        raise ConversionError(
            f"partial rotary ({config.rope_dims} of {config.head_dim} head dims) is not supported"
        )
    spec = specs.TransformerDecoderModelSpec.from_config(
        config.num_layers,
        config.num_heads,
        pre_norm=True,
        activation=common_spec.Activation.SWISH,
        ffn_glu=True,
        rms_norm=True,
        rotary_dim=0,
        # llama.cpp stores Q/K rows permuted for rotation of adjacent pairs, which
        # is CTranslate2's interleaved rotary: keep its layout. (Undoing the
        # permutation with rotary_interleave=False is equivalent in float32 but
        # CTranslate2 4.8's int8 path then produces fluent garbage.)
        rotary_interleave=True,
        rotary_base=config.rope_base,
        num_heads_kv=config.num_heads_kv if config.num_heads_kv != config.num_heads else None,
    )
    decoder = spec.decoder
    total = len(tensors)
    done = 0

    def take(name: str) -> FloatArray:
        nonlocal done
        value = tensors.get(name)
        done += 1
        progress("converting tensors", done, total)
        return value

    decoder.scale_embeddings = False
    embeddings = take("token_embd.weight")
    decoder.embeddings.weight = embeddings
    decoder.layer_norm.gamma = take("output_norm.weight")
    # Small llama models tie the output projection to the embeddings (no output.weight).
    decoder.projection.weight = take("output.weight") if "output.weight" in tensors else embeddings
    for i, layer in enumerate(decoder.layer):
        p = f"blk.{i}."
        attention = layer.self_attention
        attention.layer_norm.gamma = take(p + "attn_norm.weight")
        q = take(p + "attn_q.weight")
        k = take(p + "attn_k.weight")
        v = take(p + "attn_v.weight")
        attention.linear[0].weight = np.concatenate([q, k, v])
        attention.linear[1].weight = take(p + "attn_output.weight")
        layer.ffn.layer_norm.gamma = take(p + "ffn_norm.weight")
        layer.ffn.linear_0.weight = take(p + "ffn_gate.weight")
        layer.ffn.linear_0_noact.weight = take(p + "ffn_up.weight")
        layer.ffn.linear_1.weight = take(p + "ffn_down.weight")
    return spec


@dataclass(frozen=True, slots=True)
class _Vocab:
    tokens: list[str]
    types: list[int]
    merges: list[str]
    bos: str
    eos: str
    unk: str

    @property
    def special(self) -> list[str]:
        return [
            t
            for t, kind in zip(self.tokens, self.types, strict=True)
            if kind in (_CONTROL, _USER_DEFINED)
        ]


def _read_vocab(reader: Any) -> _Vocab:
    model = _field(reader, "tokenizer.ggml.model")
    if model != "gpt2":
        raise ConversionError(f"only byte-level BPE (gpt2) tokenizers are supported, not {model!r}")
    tokens = [str(t) for t in _field(reader, "tokenizer.ggml.tokens")]
    types = [int(t) for t in _field(reader, "tokenizer.ggml.token_type", [1] * len(tokens))]
    merges = [str(m) for m in _field(reader, "tokenizer.ggml.merges")]

    def token(key: str, fallback: int) -> str:
        index = int(_field(reader, key, fallback))
        return tokens[index] if 0 <= index < len(tokens) else ""

    return _Vocab(
        tokens=tokens,
        types=types,
        merges=merges,
        bos=token("tokenizer.ggml.bos_token_id", 0),
        eos=token("tokenizer.ggml.eos_token_id", 0),
        unk=token("tokenizer.ggml.unknown_token_id", 0),
    )


def _build_tokenizer(vocab: _Vocab, pre: str) -> Any:
    """Byte-level BPE from the GGUF lists (``tokenizers`` is the reference implementation).

    The ``smollm`` pre-tokenizer (also llama3's and most gpt2-style ones) splits
    digits one by one before the byte-level regex; control tokens are special so
    ``<|im_start|>`` in a rendered prompt becomes one token, never its letters.
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    merges = [(left, right) for left, _, right in (m.partition(" ") for m in vocab.merges)]
    bpe = models.BPE(
        vocab={t: i for i, t in enumerate(vocab.tokens)},
        merges=merges,
        unk_token=None,
        fuse_unk=False,
        byte_fallback=False,
    )
    tokenizer = Tokenizer(bpe)
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if pre in ("gpt2", "default", ""):
        tokenizer.pre_tokenizer = byte_level
    else:
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Digits(individual_digits=True), byte_level]
        )
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(
        [AddedToken(t, special=True, normalized=False) for t in vocab.special]
    )
    return tokenizer


def convert_gguf(
    gguf_path: str | os.PathLike[str],
    output_dir: str | os.PathLike[str],
    *,
    quantization: str = "int8",
    source: str = "",
    progress: Progress = no_progress,
) -> Path:
    """Convert a llama GGUF into ``output_dir`` (replacing it atomically) and return it."""
    import ctranslate2  # noqa: F401  (fail early with the import error, before any work)
    from gguf import GGUFReader

    out = Path(output_dir)
    progress("reading GGUF", 0, 1)
    reader = GGUFReader(os.fspath(gguf_path))
    config = read_config(reader)
    vocab = _read_vocab(reader)
    template = str(_field(reader, "tokenizer.chat_template", ""))
    pre = str(_field(reader, "tokenizer.ggml.pre", "gpt2"))
    progress("reading GGUF", 1, 1)

    spec = _build_spec(config, _Tensors(reader), progress)
    spec.register_vocabulary(vocab.tokens)
    spec.config.bos_token = vocab.bos
    spec.config.eos_token = vocab.eos
    spec.config.unk_token = vocab.unk
    spec.config.layer_norm_epsilon = config.rms_eps
    progress("quantizing", 0, 1)
    spec.validate()
    spec.optimize(quantization=quantization)
    progress("quantizing", 1, 1)

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        progress("writing", 0, 1)
        spec.save(os.fspath(tmp))
        _build_tokenizer(vocab, pre).save(os.fspath(tmp / TOKENIZER_FILE))
        if template:
            (tmp / TEMPLATE_FILE).write_text(template, encoding="utf-8")
        metadata = _metadata(tmp, config, vocab, source or os.fspath(gguf_path), quantization)
        (tmp / METADATA_FILE).write_text(json.dumps(metadata, indent=2), encoding="utf-8")
        tmp.chmod(0o755)  # mkdtemp makes it private; the model is not a secret
        _replace_dir(tmp, out)
        progress("writing", 1, 1)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _metadata(
    directory: Path, config: GGUFConfig, vocab: _Vocab, source: str, quantization: str
) -> dict[str, Any]:
    """What the cache records beside the converted files in ``directory``."""
    present = set(vocab.tokens)
    return {
        "format": 1,
        "name": config.name,
        "source": source,
        "quantization": quantization,
        "context_length": config.context_length,
        "end_tokens": list(
            dict.fromkeys(t for t in (vocab.eos, *_TURN_END_TOKENS) if t in present)
        ),
        # what `local info` checks the cache against (sizes on every start, no hashing)
        "files": {
            f.name: file_record(f, digest=f.name == WEIGHTS_FILE)
            for f in sorted(directory.iterdir())
            if f.is_file()
        },
    }


def _replace_dir(new: Path, target: Path) -> None:
    """Move ``new`` to ``target``; an existing target is swapped out, then removed."""
    old: Path | None = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
        old.rmdir()
        target.rename(old)
    new.rename(target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
