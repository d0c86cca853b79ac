"""The local model counts with its own tokenizer: the count is the prompt the model is
fed, the very figure its own stream reports as ``usage.input``; the same through every
shell."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("ctranslate2", reason="the local model's extra: pip install -e '.[local]'")

import trio
from tiny_model import build_tiny_model

from streamfn import io_asyncio, io_sync, io_trio
from streamfn.core import Context, Done, Options, TokenCount, model
from streamfn.local._model import LocalModel
from streamfn.local._provider import close_loaded

CONTEXTS = [
    Context.of("the cat sat on"),
    Context.of("the cat sat on the mat and the hat; then the rat ate the oat" * 3),
    Context.of("hi", system_prompt="You are tiny."),
]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield build_tiny_model(tmp_path_factory.mktemp("count"))
    close_loaded()


@pytest.mark.parametrize("context", CONTEXTS, ids=["short", "long", "system"])
def test_the_count_is_what_the_model_is_fed(tiny_dir: Path, context: Context) -> None:
    with LocalModel(tiny_dir) as local:
        counted = local.count_tokens(context)
        [done] = [
            e for e in local.stream_sync(context, Options(max_tokens=1)) if isinstance(e, Done)
        ]
    assert counted.input_tokens == done.usage.input > 0
    assert not counted.estimated and counted.source == "the local model's tokenizer"


def test_every_shell_counts_with_the_local_tokenizer(tiny_dir: Path) -> None:
    chosen = model(f"local:{tiny_dir}")
    context = CONTEXTS[1]
    with LocalModel(tiny_dir) as local:
        expected = local.count_tokens(context)
    with io_sync.Client() as client:
        by_sync = client.count_tokens(chosen, context)

    async def count(client: io_trio.Client | io_asyncio.Client) -> TokenCount:
        async with client:
            return await client.count_tokens(chosen, context)

    by_trio = trio.run(count, io_trio.Client())
    by_asyncio = asyncio.run(count(io_asyncio.Client()))
    assert by_sync == by_trio == by_asyncio
    assert by_sync.input_tokens == expected.input_tokens
