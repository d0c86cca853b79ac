"""Griffe extension: a shell's module-level functions render as the functions they are.

``streamfn.io_trio`` and ``streamfn.io_asyncio`` write ``stream = _functions.stream``
(and so on): bound methods of one `streamfn.client.ShellFunctions`, so that the
signatures and docstrings are written once. mkdocstrings reads sources statically
and would show those as bare attributes; this extension, named in ``mkdocs.yml``,
puts in their place a function with the method's signature (without ``self``),
return type (the shell's own ``Client`` for ``default_client``), async label and
docstring. It changes what the reference pages show, nothing that runs.
"""

from __future__ import annotations

from typing import Any

import griffe

SHELLS = ("io_trio", "io_asyncio")
PREFIX = "_functions."


class ShellFunctionsAsFunctions(griffe.Extension):
    """Replace each ``name = _functions.name`` in the shells with that method as a function."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.path != "streamfn":
            return
        methods = pkg["client._functions.ShellFunctions"]
        for shell in SHELLS:
            module = pkg[f"{shell}._client"]
            for name, member in list(module.members.items()):
                if member.is_alias or not member.is_attribute:
                    continue
                value = str(member.value)
                if value.startswith(PREFIX):
                    module.set_member(name, _as_function(methods[value[len(PREFIX) :]], member))


def _as_function(method: griffe.Function, where: griffe.Object) -> griffe.Function:
    returns = "Client" if method.name == "default_client" else method.returns
    function = griffe.Function(
        method.name,
        lineno=where.lineno,
        endlineno=where.endlineno,
        parameters=griffe.Parameters(*list(method.parameters)[1:]),
        returns=returns,
        docstring=method.docstring,
    )
    function.labels |= method.labels
    return function
