"""Configuring the client: where the name servers come from, and what is refused."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

import pytest

from conftest import Cluster
from longboat.client import ClientConfig, ClientUsageError
from longboat.client.admin import Admin
from longboat.client.producer import Producer

from .client_e2e import config_for


@pytest.fixture
def no_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("LONGBOAT_NAMESRV", raising=False)
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    return monkeypatch


def test_precedence_argument_then_ours_then_javas_then_default(no_env: pytest.MonkeyPatch) -> None:
    assert ClientConfig().namesrv_addrs == ["127.0.0.1:9876"]
    assert ClientConfig().namesrv_source == "default"
    no_env.setenv("NAMESRV_ADDR", "java-ns:9876")
    assert (ClientConfig().namesrv_addrs, ClientConfig().namesrv_source) == (
        ["java-ns:9876"],
        "$NAMESRV_ADDR",
    )
    no_env.setenv("LONGBOAT_NAMESRV", "ours:9000;ours2:9000")
    assert ClientConfig().namesrv_addrs == ["ours:9000", "ours2:9000"]
    assert ClientConfig().namesrv_source == "$LONGBOAT_NAMESRV"
    config = ClientConfig(["given:1234"])
    assert (config.namesrv_addrs, config.namesrv_source) == (["given:1234"], "argument")
    # The clients' namesrv_addrs= goes through the same rule.
    assert Producer("p").config.namesrv_addrs == ["ours:9000", "ours2:9000"]
    assert Producer("p", namesrv_addrs="given:1").config.namesrv_addrs == ["given:1"]


@pytest.mark.parametrize(
    ("given", "parsed"),
    [
        ("ns1", ["ns1:9876"]),
        ("ns1:9000; ns2", ["ns1:9000", "ns2:9876"]),
        ("rocketmq://ns1:9000;ns2:9001", ["ns1:9000", "ns2:9001"]),
        ("[::1]:9000,10.0.0.1", ["[::1]:9000", "10.0.0.1:9876"]),
    ],
)
def test_address_forms(no_env: pytest.MonkeyPatch, given: str, parsed: list[str]) -> None:
    assert Producer("p", namesrv_addrs=given).config.namesrv_addrs == parsed
    no_env.setenv("NAMESRV_ADDR", given)
    assert ClientConfig().namesrv_addrs == parsed


@pytest.mark.parametrize(
    "given", ["ns1:port", "ns1:70000", "http://ns1:9876", "ns1:9876;:9876", " ; ", "a b:1"]
)
def test_malformed_addresses_are_usage_errors(no_env: pytest.MonkeyPatch, given: str) -> None:
    with pytest.raises(ClientUsageError, match="name-server address"):
        Producer("p", namesrv_addrs=given)
    no_env.setenv("LONGBOAT_NAMESRV", given)
    with pytest.raises(ClientUsageError):
        ClientConfig()


def test_bad_client_ip_is_a_usage_error() -> None:
    with pytest.raises(ClientUsageError, match="client_ip"):
        ClientConfig(["ns:1"], client_ip="not-an-ip")


async def test_the_address_used_is_logged_at_start(
    namesrv: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="longboat.client._internal.instance"):
        async with Admin(config=config_for(namesrv)) as admin:
            await admin.topics()
    assert f"name server(s) {namesrv} (argument)" in caplog.text


async def test_a_broker_address_given_as_name_server_is_named_so(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    async with Admin(config=config_for(cluster.broker_addr)) as admin:
        with pytest.raises(ClientUsageError, match="looks like a broker, not a name server"):
            await admin.topics()


def test_a_config_is_fixed_once_built_and_a_replaced_one_is_checked_again(
    no_env: pytest.MonkeyPatch,
) -> None:
    config = ClientConfig(["ns1:9000"], client_ip="127.0.0.1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.request_timeout = 1.0  # type: ignore[misc]
    quicker = dataclasses.replace(config, request_timeout=1.0, namesrv_addrs=["ns2"])
    assert (quicker.request_timeout, quicker.namesrv_addrs) == (1.0, ["ns2:9876"])
    assert (config.request_timeout, config.namesrv_addrs) == (3.0, ["ns1:9000"])
    with pytest.raises(ClientUsageError, match="client_ip"):
        dataclasses.replace(config, client_ip="not-an-ip")
