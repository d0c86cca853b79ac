"""``streamfn serve`` turns the dashboard on from ``STREAMFN_ADMIN_KEY`` only: the real
command in a subprocess serves ``/admin`` to that key, and nothing at ``/admin``
without it; an admin key equal to the clients' token is refused before anything runs."""

from __future__ import annotations

import httpx
import pytest
from admin_support import ADMIN
from loopback_server import KEY, serve_cli

from streamfn import cli


def test_the_admin_key_comes_from_the_environment() -> None:
    with serve_cli([], {"STREAMFN_ADMIN_KEY": ADMIN}) as url:
        flights = httpx.get(
            url + "/admin/api/flights", headers={"authorization": f"Bearer {ADMIN}"}
        )
        assert flights.status_code == 200 and flights.json()["flights"] == []
        refused = httpx.get(url + "/admin/api/flights", headers={"authorization": f"Bearer {KEY}"})
        assert refused.status_code == 403
    with serve_cli([], {"STREAMFN_ADMIN_KEY": ""}) as url:
        answer = httpx.get(url + "/admin", headers={"authorization": f"Bearer {KEY}"})
        assert answer.status_code == 404


def test_an_admin_key_equal_to_the_clients_token_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMFN_ADMIN_KEY", "same")
    assert cli.main(["serve", "--no-local", "--api-key", "same"]) == 2
    assert "STREAMFN_ADMIN_KEY is the clients' token too" in capsys.readouterr().err
