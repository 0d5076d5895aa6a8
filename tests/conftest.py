"""Shared settings for dpopt's tests."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "problems"

settings.register_profile("dpopt", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("dpopt")
