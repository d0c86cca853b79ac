"""One story of trying again: the layers' order and their shared rule, read from one place."""

from __future__ import annotations

from streamfn.client._pipeline import STAGES
from streamfn.core._events import Error, ErrorKind
from streamfn.core.catalogue._models import get_model
from streamfn.core.serve._deployments import Cooldown, Deployment, Pool
from streamfn.core.stages._fallback import fallback, falls_back
from streamfn.core.stages._retry import RetryPolicy
from streamfn.core.stages._try_again import LAYERS, most_requests, tries_again


def test_the_client_stages_nest_in_the_layers_order() -> None:
    names = [layer.name for layer in LAYERS]
    assert names == ["deployments", "fallback", "recovery", "retry"]
    stages = [stage.__name__ for stage in STAGES]
    # the layers that are client stages, in the stages' nesting order
    assert [n for n in stages if n in names] == [n for n in names if n in stages]
    assert "retry" not in stages  # in the driver, below every stage: innermost
    assert [layer.before_output for layer in LAYERS] == [True, True, False, True]


def _pool() -> Pool[str]:
    deployments = [Deployment(f"d{i}", "n", "m", "", 1.0, "t") for i in range(2)]
    return Pool(deployments, Cooldown())


def test_every_layer_before_output_moves_on_for_the_same_failures() -> None:
    chain = fallback([get_model("openai:gpt-4o-mini"), get_model("anthropic:claude-haiku-4-5")])
    for kind in ErrorKind:
        error = Error(message="x", kind=kind)
        expected = tries_again(error)
        assert (RetryPolicy().delay(1, error, None, 0.0) is not None) == expected, kind
        assert falls_back(chain, error) == expected, kind
        assert _pool().failed(0, error, now=0.0) == expected, kind
    assert {k for k in ErrorKind if tries_again(Error(message="x", kind=k))} == {
        ErrorKind.THROTTLED,
        ErrorKind.NETWORK,
    }


def test_the_layers_before_output_multiply_and_recovery_adds() -> None:
    assert most_requests() == 1
    assert most_requests(deployments=2, attempts=3) == 6
    assert most_requests(deployments=2, models=2, attempts=2, recoveries=2) == 8 + 4
