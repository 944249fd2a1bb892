"""Settings from HERALD_* variables, and the timing invariants the exactly-once argument rests on."""

from __future__ import annotations

import pytest

from core.config import WORKER_JOBS, Settings, from_env
from core.domain.errors import ConfigError


def test_defaults_are_consistent() -> None:
    s = Settings()
    assert s.database_url == "sqlite:///herald.db"
    assert s.redis_url == ""
    assert s.queue == "herald"
    assert s.lease_seconds == 30.0
    assert s.grace_seconds == 30.0
    assert s.call_timeout == 10.0
    assert s.max_attempts == 6
    assert s.call_timeout < s.lease_seconds
    assert s.grace_seconds > s.call_timeout


def test_empty_environment_gives_the_defaults() -> None:
    assert from_env({}) == Settings()


def test_empty_variable_keeps_the_default() -> None:
    assert from_env({"HERALD_LEASE_SECONDS": ""}).lease_seconds == 30.0


def test_unrelated_variables_are_ignored() -> None:
    assert from_env({"LEASE_SECONDS": "1", "HERALD_UNKNOWN": "x"}) == Settings()


def test_environment_values_are_parsed_to_their_types() -> None:
    s = from_env(
        {
            "HERALD_LEASE_SECONDS": "60",
            "HERALD_GRACE_SECONDS": "45.5",
            "HERALD_CALL_TIMEOUT": "20",
            "HERALD_MAX_ATTEMPTS": "3",
            "HERALD_DATABASE_URL": "postgresql+psycopg://h@db/herald",
            "HERALD_QUEUE": "other",
        }
    )
    assert s.lease_seconds == 60.0
    assert isinstance(s.lease_seconds, float)
    assert s.grace_seconds == 45.5
    assert s.call_timeout == 20.0
    assert s.max_attempts == 3
    assert isinstance(s.max_attempts, int)
    assert s.database_url == "postgresql+psycopg://h@db/herald"
    assert s.queue == "other"


def test_call_timeout_not_shorter_than_the_lease_is_refused_naming_both_settings() -> None:
    with pytest.raises(ConfigError) as info:
        from_env({"HERALD_CALL_TIMEOUT": "30", "HERALD_LEASE_SECONDS": "30", "HERALD_GRACE_SECONDS": "60"})
    assert "HERALD_CALL_TIMEOUT" in str(info.value)
    assert "HERALD_LEASE_SECONDS" in str(info.value)


def test_call_timeout_longer_than_the_lease_is_refused() -> None:
    with pytest.raises(ConfigError, match="HERALD_LEASE_SECONDS"):
        Settings(call_timeout=40, lease_seconds=30, grace_seconds=60)


def test_grace_not_longer_than_the_call_timeout_is_refused_naming_both_settings() -> None:
    with pytest.raises(ConfigError) as info:
        from_env({"HERALD_GRACE_SECONDS": "10", "HERALD_CALL_TIMEOUT": "10"})
    assert "HERALD_GRACE_SECONDS" in str(info.value)
    assert "HERALD_CALL_TIMEOUT" in str(info.value)


def test_an_arming_horizon_shorter_than_a_tick_is_refused_naming_both_settings() -> None:
    with pytest.raises(ConfigError) as info:
        from_env({"HERALD_ARMING_HORIZON": "59", "HERALD_TICK_SECONDS": "60"})
    assert "HERALD_ARMING_HORIZON" in str(info.value)
    assert "HERALD_TICK_SECONDS" in str(info.value)
    assert Settings(arming_horizon=60, tick_seconds=60).arming_horizon == 60


def test_non_positive_lease_is_refused() -> None:
    with pytest.raises(ConfigError, match="HERALD_LEASE_SECONDS"):
        Settings(lease_seconds=0)


def test_max_attempts_below_one_is_refused() -> None:
    with pytest.raises(ConfigError, match="HERALD_MAX_ATTEMPTS"):
        from_env({"HERALD_MAX_ATTEMPTS": "0"})


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("HERALD_LEASE_SECONDS", "thirty"),
        ("HERALD_CALL_TIMEOUT", "10s"),
        ("HERALD_MAX_ATTEMPTS", "2.5"),
        ("HERALD_BACKOFF_BASE", "fast"),
    ],
)
def test_bad_number_is_refused_naming_the_variable(name: str, raw: str) -> None:
    with pytest.raises(ConfigError) as info:
        from_env({name: raw})
    assert name in str(info.value)
    assert repr(raw) in str(info.value)


def test_with_checks_the_invariants_again() -> None:
    with pytest.raises(ConfigError):
        Settings().with_(call_timeout=100.0)
    assert Settings().with_(queue="q").queue == "q"


def test_negative_grace_is_refused_naming_the_grace_setting() -> None:
    with pytest.raises(ConfigError, match="HERALD_GRACE_SECONDS"):
        from_env({"HERALD_GRACE_SECONDS": "-1"})


def test_nan_timeout_is_refused() -> None:
    with pytest.raises(ConfigError, match="HERALD_CALL_TIMEOUT"):
        from_env({"HERALD_CALL_TIMEOUT": "nan"})


@pytest.mark.parametrize("raw", ["0", "-1"])
def test_non_positive_backoff_base_is_refused(raw: str) -> None:
    with pytest.raises(ConfigError, match="HERALD_BACKOFF_BASE"):
        from_env({"HERALD_BACKOFF_BASE": raw})


@pytest.mark.parametrize("raw", ["0.001", "1e9", "86400"])
def test_a_tick_that_would_busy_loop_or_never_come_is_refused(raw: str) -> None:
    with pytest.raises(ConfigError) as info:
        from_env({"HERALD_TICK_SECONDS": raw})
    assert (
        str(info.value) == f"HERALD_TICK_SECONDS={float(raw):g}: give a number of seconds from 0.05 to 3600 (e.g. 60)."
    )


@pytest.mark.parametrize("raw", ["nan", "inf", "-5", "0"])
def test_a_tick_that_is_no_period_is_refused(raw: str) -> None:
    with pytest.raises(ConfigError, match="HERALD_TICK_SECONDS"):
        from_env({"HERALD_TICK_SECONDS": raw})


@pytest.mark.parametrize("raw", ["0.05", "1", "3600"])
def test_a_tick_in_range_is_taken(raw: str) -> None:
    assert from_env({"HERALD_TICK_SECONDS": raw}).tick_seconds == float(raw)


def test_the_past_slot_tolerance_may_be_zero_but_not_negative() -> None:
    assert Settings().past_slot_tolerance == 60.0
    assert from_env({"HERALD_PAST_SLOT_TOLERANCE": "0"}).past_slot_tolerance == 0.0
    with pytest.raises(ConfigError, match="HERALD_PAST_SLOT_TOLERANCE"):
        from_env({"HERALD_PAST_SLOT_TOLERANCE": "-1"})


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("mysql://herald:s3cret@db/herald", "mysql://herald:***@db/herald"),
        ("garbage", "garbage"),
        ("postgres://h@db/herald", "postgres://h@db/herald"),
        ("sqlite:herald.db", "sqlite:herald.db"),
        ("postgresql://h@db:port/herald", "postgresql://h@db:port/herald"),
    ],
)
def test_a_database_url_herald_does_not_speak_is_one_line_naming_the_two_it_does(url: str, shown: str) -> None:
    with pytest.raises(ConfigError) as info:
        from_env({"HERALD_DATABASE_URL": url})
    assert str(info.value) == (
        f"HERALD_DATABASE_URL={shown!r}: herald speaks sqlite:///PATH (e.g. sqlite:///herald.db) "
        "and postgresql://USER:PASSWORD@HOST[:PORT]/DATABASE URLs"
    )


@pytest.mark.parametrize(
    "url", ["sqlite:///herald.db", "sqlite:////var/lib/herald.db", "sqlite://", "postgresql://h:pw@db:5432/herald"]
)
def test_the_database_urls_herald_speaks_are_taken(url: str) -> None:
    assert from_env({"HERALD_DATABASE_URL": url}).database_url == url


def test_a_shown_database_url_never_carries_its_password() -> None:
    from core.config import masked_url

    assert masked_url("postgresql://herald:s3cret@db:5432/herald") == "postgresql://herald:***@db:5432/herald"
    assert masked_url("postgresql://herald@db/herald") == "postgresql://herald@db/herald"
    assert masked_url("sqlite:///herald.db") == "sqlite:///herald.db"


def test_plugins_toml_defaults_to_none_named() -> None:
    assert Settings().plugins_toml == ""


@pytest.mark.parametrize("raw", ["JSON", "xml", "logfmt"])
def test_a_log_format_herald_does_not_write_is_refused_naming_both_it_writes(raw: str) -> None:
    with pytest.raises(ConfigError, match=r"HERALD_LOG_FORMAT=.*: give text or json"):
        from_env({"HERALD_LOG_FORMAT": raw})
    assert from_env({"HERALD_LOG_FORMAT": "json"}).log_format == "json"


def test_a_worker_runs_several_jobs_at_once_on_postgresql_and_one_on_sqlite_unless_told() -> None:
    assert from_env({"HERALD_DATABASE_URL": "postgresql://u@h/db"}).jobs_at_once == WORKER_JOBS > 1
    assert from_env({}).jobs_at_once == 1
    assert from_env({"HERALD_WORKER_JOBS": "4"}).jobs_at_once == 4
    with pytest.raises(ConfigError, match="HERALD_WORKER_JOBS"):
        from_env({"HERALD_WORKER_JOBS": "-1"})
