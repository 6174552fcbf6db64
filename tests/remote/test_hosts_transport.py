"""Hosts and the ssh transport against the real sshd of conftest.py."""

from __future__ import annotations

from workbench.remote import probe


def test_check_reports_python_workbench_and_devices(lo_host):
    report = probe.check(lo_host)
    assert report["workbench"]
    assert report["python"].startswith("3.")
    cpu = report["devices"]["cpu"]
    assert cpu["available"]
    assert cpu["devices"][0]["spec"] == "lo/cpu"
    assert cpu["devices"][0]["host"] == "lo"
