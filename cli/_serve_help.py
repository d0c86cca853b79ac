"""What ``streamfn serve --help`` says to users: what the server does, examples, and
the environment it reads."""

from __future__ import annotations

from typing import Final

__all__ = ["ADMIN_KEY_ENV", "API_KEY_ENV", "DESCRIPTION", "EPILOG", "LIST_ALL_MODELS_HELP"]

#: ``--list-all-models``
LIST_ALL_MODELS_HELP: Final = (
    "GET /v1/models lists every known model (default: only those whose provider key "
    "is set here, the ones a client can use)"
)

#: the token clients must send, when --api-key is not given
API_KEY_ENV: Final = "STREAMFN_SERVER_API_KEY"
#: the operator's key for /metrics and the dashboard (environment only)
ADMIN_KEY_ENV: Final = "STREAMFN_ADMIN_KEY"

DESCRIPTION: Final = """\
Serve models over HTTP: the local model and every provider whose key is set here,
to any OpenAI client (/v1/chat/completions), Anthropic client (/v1/messages) or
streamfn's own proxy provider (/v1/stream, -m proxy:MODEL). Clients pick a model
by name ("local", "openai:gpt-4o-mini" ...); GET /v1/models lists those this
server can serve. The server keeps no state between requests, so --workers N
processes can share one port.
"""

EPILOG: Final = f"""\
examples:
  streamfn serve
      the local model on http://127.0.0.1:8000 (plus every provider whose key is set)
  streamfn serve --host 0.0.0.0 --port 9000 --api-key "$TOKEN"
      reachable from other machines; clients must send the token
  streamfn serve --no-local --config gateway.toml --workers 4
      a gateway serving the models named in gateway.toml, in 4 processes
  streamfn serve --no-local --config gateway.toml --store --workers 4
      the same with client keys (streamfn keys create): each client its own key,
      limits and budget, every request recorded in the default store
      (or the one gateway.toml's [keys] table names)
  streamfn serve --no-local --base-url openai=http://127.0.0.1:4000/v1
      every openai:* model through another OpenAI-compatible upstream

then, from any OpenAI client:
  curl -N http://127.0.0.1:8000/v1/chat/completions -H 'content-type: application/json' \\
    -d '{{"model": "local", "stream": true, "messages": [{{"role": "user", "content": "Hi"}}]}}'

environment:
  {API_KEY_ENV:<28}the token clients must send (like --api-key); streamfn
                              clients send theirs from STREAMFN_PROXY_TOKEN
  {ADMIN_KEY_ENV:<28}the operator's key for GET /metrics (Prometheus) and the
                              dashboard at /admin; a client key never opens them.
                              Without it there is no dashboard, and /metrics is
                              served only when clients need no key
  OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY ...
                              the upstream keys, read once at start; a model whose key
                              is missing is not listed, and asking for it is an error
                              saying the server lacks its key
  STREAMFN_LOCAL_MODEL_DIR    the local model's directory (like --model-dir)
  STREAMFN_DEBUG=1            a traceback instead of a one-line error

Stop with Ctrl-C or SIGTERM: open streams get --shutdown-grace seconds to finish,
then end with an error event in their dialect.
"""
