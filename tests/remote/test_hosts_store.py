"""The hosts file and the ssh command line (no server needed)."""

from __future__ import annotations

import pytest

from workbench.remote import ssh
from workbench.remote.hosts import Host, HostError, HostStore, parse_url, split_spec


def test_parse_url():
    assert parse_url("ssh://me@gpu1.example.org:2222") == ("me", "gpu1.example.org", 2222)
    assert parse_url("gpu1") == (None, "gpu1", None)
    for bad, why in [
        ("http://h", "expected ssh://"),
        ("ssh://h:99999", "port"),
        ("ssh://u:pw@h", "no password"),
    ]:
        with pytest.raises(HostError, match=why):
            parse_url(bad)


def test_store_round_trip_and_bad_file(tmp_path):
    store = HostStore(tmp_path / "sub" / "hosts.json")
    store.add(Host("gpu1", "gpu1.example.org", user="me", port=2222, identity="~/.ssh/k"))
    assert HostStore(store.path).get("gpu1").url == "ssh://me@gpu1.example.org:2222"
    with pytest.raises(HostError, match="no host named 'x'.*configured: gpu1"):
        store.get("x")
    store.path.write_text("{not json")
    with pytest.raises(HostError, match=str(store.path)):
        store.load()


def test_split_spec():
    assert split_spec("lo/cuda:0", ["lo"]) == ("lo", "cuda:0")
    assert split_spec("wgpu:0") == (None, "wgpu:0")
    with pytest.raises(HostError, match="no host named 'gpu9'"):
        split_spec("gpu9/cpu", ["lo"])


def test_ssh_command_line_checks_keys_never_prompts_and_shares_a_connection(monkeypatch, tmp_path):
    monkeypatch.setenv("WB_SSH_CONTROL_DIR", str(tmp_path))
    monkeypatch.delenv("WB_SSH_CONFIG", raising=False)
    host = Host("g", "gpu1", user="me", port=2222, identity="/k", ssh_options=["ProxyJump=gw"])
    argv = ssh.ssh_argv(host, "true")
    options = [argv[i + 1] for i, a in enumerate(argv) if a == "-o"]
    assert options[0] == "ProxyJump=gw"  # the host's own options first: ssh keeps the first value
    for wanted in (
        "BatchMode=yes",
        "StrictHostKeyChecking=yes",
        "ControlMaster=auto",
        f"ControlPath={tmp_path}/%C",
    ):
        assert wanted in options
    assert (
        argv[-3:] == ["--", "gpu1", "true"]
        and ["-p", "2222"] == argv[argv.index("-p") : argv.index("-p") + 2]
    )
    explained = ssh.explain(
        host, ["No ED25519 host key is known for [gpu1]:2222 and you have requested strict checking."]
    )
    assert isinstance(
        explained, ssh.HostKeyError
    ) and "ssh-keyscan -p 2222 gpu1 >> ~/.ssh/known_hosts" in str(explained)
