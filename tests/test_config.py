"""Settings: precedence flags > env > TOML file > defaults, validation, masking, private files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from walletpass_tui.config import (
    DEFAULT_MAX_BODY,
    DEFAULT_RECEIVER_HOST,
    DEFAULT_RECEIVER_PATH,
    DEFAULT_RECEIVER_PORT,
    DEFAULT_RETENTION_DAYS,
    DEFAULT_TIMEOUT_S,
    DEFAULT_TOLERANCE_S,
    Settings,
    load_settings,
)
from walletpass_tui.config.errors import ConfigError
from walletpass_tui.config.secrets import Secret, mask_secret

KEY = "wp_live_Zk2v9Qe1xR7mB4nC8tY3uW6s"
FILE_KEY = "wp_test_fileFileFileFileFileFile1"
ENV_KEY = "wp_test_envEnvEnvEnvEnvEnvEnvEnv2"


@pytest.fixture
def xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Path]:
    """platformdirs resolves into tmp_path; env passed to load_settings is explicit."""
    dirs = {"config": tmp_path / "xdg-config", "data": tmp_path / "xdg-data"}
    monkeypatch.setenv("XDG_CONFIG_HOME", str(dirs["config"]))
    monkeypatch.setenv("XDG_DATA_HOME", str(dirs["data"]))
    return dirs


def write_toml(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- masking -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "masked"),
    [
        (None, "(not set)"),
        ("", "(not set)"),
        ("wp_live_Zk2v9Qe1xR7mB4nC8tY3uW6s", "wp_live_…uW6s"),
        ("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_…LaSw"),
        ("0123456789abcdef0123", "…0123"),
        ("short", "…"),
        ("whsec_abcdefghij", "whsec_…"),
        ("wp_live_abc", "…"),
        ("a_", "…"),
        ("abc_def_", "…"),
        ("abcdefgh_abcdefgh_abcdefgh_x", "…gh_x"),
        ("abcdefgh_abcdefgh_abcdefgh_" + "x" * 9 + "WXYZ", "…WXYZ"),
    ],
)
def test_mask_secret(value: str | None, masked: str) -> None:
    assert mask_secret(value) == masked


@example("abcdefgh_abcdefgh_abcdefgh_" + "x" * 12)
@example("wp_live_v2_" + "x" * 12)
@example("ab_" * 3)
@given(
    st.one_of(
        st.text(alphabet=st.characters(blacklist_characters="…"), min_size=1, max_size=80),
        st.from_regex(r"([a-z]{1,8}_){1,3}[A-Za-z0-9_+/]{0,40}", fullmatch=True),
    )
)
def test_mask_never_shows_a_secret_or_most_of_it(value: str) -> None:
    masked = mask_secret(value)
    assert value not in masked
    shown = len(masked.replace("…", ""))
    assert shown <= 12 + 4, "a short label and the last 4 characters at most"
    assert len(value) - shown >= min(8, len(value)), "at least 8 characters stay hidden"


def test_secret_never_shows_itself() -> None:
    secret = Secret(KEY)
    texts = [
        str(secret),
        repr(secret),
        f"{secret}",
        f"{secret!r}",
        f"{secret:>50}",
        "%s" % secret,  # noqa: UP031
        str([secret]),
        str({"k": secret}),
    ]
    for text in texts:
        assert KEY not in text
        assert "uW6s" in text
    assert secret.reveal() == KEY
    assert secret.masked == "wp_live_…uW6s"
    assert secret == Secret(KEY) and secret != Secret(KEY + "x") and secret != KEY
    assert hash(secret) == hash(Secret(KEY))
    assert bool(secret) and not bool(Secret(""))


def test_settings_repr_and_describe_mask_the_key(tmp_path: Path) -> None:
    settings = Settings(api_key=Secret(KEY), home=tmp_path)
    assert KEY not in repr(settings)
    assert KEY not in str(settings)
    rows = {name: (value, source) for name, value, source in settings.describe()}
    assert rows["api_key"] == ("wp_live_…uW6s", "default")
    assert Settings(home=tmp_path).describe()[2] == ("api_key", "(not set)", "default")


# -- defaults and where files live -------------------------------------------------------------


def test_defaults(xdg: dict[str, Path]) -> None:
    settings = load_settings({}, env={})
    assert settings.base_url is None and settings.registration_url is None
    assert settings.api_key is None
    assert settings.receiver_host == DEFAULT_RECEIVER_HOST == "127.0.0.1"
    assert settings.receiver_port == DEFAULT_RECEIVER_PORT == 8787
    assert settings.receiver_path == DEFAULT_RECEIVER_PATH == "/webhooks"
    assert settings.tolerance_s == DEFAULT_TOLERANCE_S == 300
    assert settings.max_body == DEFAULT_MAX_BODY == 1024 * 1024
    assert settings.timeout_s == DEFAULT_TIMEOUT_S
    assert settings.retention_days == DEFAULT_RETENTION_DAYS
    assert settings.allow_http is False
    assert settings.home == xdg["data"] / "walletpass-tui"
    assert settings.config_file == xdg["config"] / "walletpass-tui" / "config.toml"
    assert settings.database_path == settings.home / "deliveries.sqlite3"
    assert settings.endpoints_path == settings.home / "endpoints.json"
    assert {source for _, _, source in settings.describe()} == {"default"}
    assert settings.receiver_url() == "http://127.0.0.1:8787/webhooks"


def test_walletpass_home_holds_data_and_config(xdg: dict[str, Path], tmp_path: Path) -> None:
    home = tmp_path / "wp"
    write_toml(home / "config.toml", 'base_url = "https://api.example.com"\n')
    settings = load_settings({}, env={"WALLETPASS_HOME": str(home)})
    assert settings.home == home
    assert settings.config_file == home / "config.toml"
    assert settings.base_url == "https://api.example.com"
    assert settings.source_of("base_url") == f"file {home / 'config.toml'}"
    assert settings.source_of("home") == "env WALLETPASS_HOME"
    assert settings.endpoints_path == home / "endpoints.json"


def test_home_flag_holds_data_and_config_too(xdg: dict[str, Path], tmp_path: Path) -> None:
    """--home is documented as the data *and config* directory, like WALLETPASS_HOME."""
    env_home, flag_home = tmp_path / "env-home", tmp_path / "flag-home"
    write_toml(env_home / "config.toml", 'base_url = "https://env-home.example"\n')
    write_toml(flag_home / "config.toml", 'base_url = "https://flag-home.example"\n')
    settings = load_settings({"home": str(flag_home)}, env={"WALLETPASS_HOME": str(env_home)})
    assert settings.home == flag_home
    assert settings.config_file == flag_home / "config.toml"
    assert settings.base_url == "https://flag-home.example"


def test_home_expands_the_user(xdg: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/someone")
    assert load_settings({"home": "~/wp"}, env={}).home == Path("/home/someone/wp")


def test_explicit_config_path(xdg: dict[str, Path], tmp_path: Path) -> None:
    home = tmp_path / "wp"
    write_toml(home / "config.toml", 'base_url = "https://from-home.example"\n')
    other = write_toml(tmp_path / "elsewhere.toml", 'base_url = "https://from-flag.example"\n')
    settings = load_settings({}, env={"WALLETPASS_HOME": str(home)}, config_file=other)
    assert settings.base_url == "https://from-flag.example"
    assert settings.config_file == other
    assert settings.home == home


def test_explicit_config_path_must_exist(xdg: dict[str, Path], tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError, match="does not exist") as info:
        load_settings({}, env={}, config_file=missing)
    assert str(missing) in str(info.value)


def test_a_missing_default_config_file_is_fine(xdg: dict[str, Path], tmp_path: Path) -> None:
    settings = load_settings({}, env={"WALLETPASS_HOME": str(tmp_path / "empty")})
    assert settings.base_url is None


def test_config_path_that_is_a_directory(xdg: dict[str, Path], tmp_path: Path) -> None:
    (tmp_path / "dir.toml").mkdir()
    with pytest.raises(ConfigError, match="Cannot read the config file"):
        load_settings({}, env={}, config_file=tmp_path / "dir.toml")


# -- precedence --------------------------------------------------------------------------------


def test_flags_beat_env_beat_file_beat_defaults(xdg: dict[str, Path], tmp_path: Path) -> None:
    config = write_toml(
        tmp_path / "c.toml",
        f"""
base_url = "https://file.example"
registration_url = "https://file-hooks.example"
api_key = "{FILE_KEY}"
receiver_port = 9000
timeout_s = 3
""",
    )
    env = {
        "WALLETPASS_BASE_URL": "https://env.example",
        "WALLETPASS_API_KEY": ENV_KEY,
        "WALLETPASS_HOME": str(tmp_path / "env-home"),
    }
    settings = load_settings(
        {"api_key": KEY, "receiver_path": "/hooks"}, env=env, config_file=config
    )

    assert settings.api_key is not None and settings.api_key.reveal() == KEY
    assert settings.source_of("api_key") == "flag"
    assert settings.base_url == "https://env.example"
    assert settings.source_of("base_url") == "env WALLETPASS_BASE_URL"
    assert settings.registration_url == "https://file-hooks.example"
    assert settings.source_of("registration_url") == f"file {config}"
    assert settings.receiver_port == 9000
    assert settings.timeout_s == 3.0 and isinstance(settings.timeout_s, float)
    assert settings.receiver_path == "/hooks"
    assert settings.source_of("receiver_path") == "flag"
    assert settings.receiver_host == "127.0.0.1"
    assert settings.source_of("receiver_host") == "default"
    assert settings.home == tmp_path / "env-home"


def test_env_beats_file_for_the_key(xdg: dict[str, Path], tmp_path: Path) -> None:
    config = write_toml(tmp_path / "c.toml", f'api_key = "{FILE_KEY}"\n')
    settings = load_settings({}, env={"WALLETPASS_API_KEY": ENV_KEY}, config_file=config)
    assert settings.api_key == Secret(ENV_KEY)
    settings = load_settings({}, env={}, config_file=config)
    assert settings.api_key == Secret(FILE_KEY)
    assert settings.source_of("api_key") == f"file {config}"


def test_none_flags_and_empty_env_values_do_not_count(xdg: dict[str, Path], tmp_path: Path) -> None:
    config = write_toml(tmp_path / "c.toml", 'base_url = "https://file.example"\n')
    settings = load_settings(
        {"base_url": None}, env={"WALLETPASS_BASE_URL": ""}, config_file=config
    )
    assert settings.base_url == "https://file.example"


def test_registration_url_env(xdg: dict[str, Path]) -> None:
    settings = load_settings({}, env={"WALLETPASS_REGISTRATION_URL": "https://hooks.example/"})
    assert settings.registration_url == "https://hooks.example"
    assert settings.source_of("registration_url") == "env WALLETPASS_REGISTRATION_URL"


def test_urls_lose_trailing_slashes(xdg: dict[str, Path]) -> None:
    settings = load_settings(
        {"base_url": "https://api.example.com/v/", "public_url": "https://ab12.ngrok.app//"},
        env={},
    )
    assert settings.base_url == "https://api.example.com/v"
    assert settings.public_url == "https://ab12.ngrok.app"


def test_with_values_records_the_source(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path).with_values("demo", receiver_port=0, allow_http=True)
    assert (settings.receiver_port, settings.allow_http) == (0, True)
    assert settings.source_of("receiver_port") == "demo"
    assert settings.source_of("base_url") == "default"


def test_receiver_url_brackets_ipv6(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, receiver_host="::1", receiver_port=9)
    assert settings.receiver_url() == "http://[::1]:9/webhooks"


# -- the TOML file -----------------------------------------------------------------------------


def test_tables_and_friendly_aliases(xdg: dict[str, Path], tmp_path: Path) -> None:
    config = write_toml(
        tmp_path / "c.toml",
        """
[service]
base_url = "https://api.example.com"
timeout = 2.5

[receiver]
host = "0.0.0.0"
port = 9999
path = "/in"
tolerance = 60
data_dir = "/tmp/wp-data"
""",
    )
    settings = load_settings({}, env={}, config_file=config)
    assert settings.base_url == "https://api.example.com"
    assert settings.timeout_s == 2.5
    assert (settings.receiver_host, settings.receiver_port, settings.receiver_path) == (
        "0.0.0.0",
        9999,
        "/in",
    )
    assert settings.tolerance_s == 60
    assert settings.home == Path("/tmp/wp-data")


def test_the_tunnel_table(xdg: dict[str, Path], tmp_path: Path) -> None:
    config = write_toml(
        tmp_path / "c.toml",
        """
[tunnel]
provider = "cloudflared"
name = "hooks"
url = "https://hooks.example.com/"
""",
    )
    settings = load_settings({}, env={}, config_file=config)
    assert (settings.tunnel, settings.tunnel_name, settings.tunnel_url) == (
        "cloudflared",
        "hooks",
        "https://hooks.example.com",
    )
    assert settings.source_of("tunnel") == f"file {config}"
    # --tunnel none turns off what the file asks for.
    assert load_settings({"tunnel": "none"}, env={}, config_file=config).tunnel is None


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('provider = "localtunnel"', "The tunnel must be one of cloudflared, ngrok or none"),
        ('provider = "cloudflared"\nname = "two words"', "The tunnel name must be"),
        ('provider = "cloudflared"\nname = "--url"', "The tunnel name must be"),
        ("provider = 3", "The setting tunnel from config file"),
    ],
)
def test_a_tunnel_table_that_cannot_be_used(
    xdg: dict[str, Path], tmp_path: Path, table: str, said: str
) -> None:
    config = write_toml(tmp_path / "c.toml", "[tunnel]\n" + table + "\n")
    with pytest.raises(ConfigError) as caught:
        load_settings({}, env={}, config_file=config)
    assert said in str(caught.value)


def test_bad_toml_is_a_clear_error(xdg: dict[str, Path], tmp_path: Path) -> None:
    config = write_toml(tmp_path / "c.toml", 'base_url = "https://unterminated\n')
    with pytest.raises(ConfigError) as info:
        load_settings({}, env={}, config_file=config)
    message = str(info.value)
    assert str(config) in message and "not valid TOML" in message and "line 1" in message


def test_bad_toml_in_walletpass_home(xdg: dict[str, Path], tmp_path: Path) -> None:
    write_toml(tmp_path / "h" / "config.toml", "[receiver\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings({}, env={"WALLETPASS_HOME": str(tmp_path / "h")})


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('base_ulr = "https://x.example"\n', "base_ulr"),
        ("[receiver]\nprot = 1\n", "prot"),
        ("[reciever]\nport = 1\n", "[reciever]"),
        ("[service.extra]\nx = 1\n", "extra"),
    ],
)
def test_unknown_keys_are_named(
    xdg: dict[str, Path], tmp_path: Path, text: str, named: str
) -> None:
    config = write_toml(tmp_path / "c.toml", text)
    with pytest.raises(ConfigError) as info:
        load_settings({}, env={}, config_file=config)
    assert named in str(info.value)
    assert "unknown setting" in str(info.value)
    assert "known ones are" in str(info.value)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('receiver_port = "abc"', "receiver_port"),
        ('receiver_port = "8080"', "receiver_port"),
        ("receiver_port = 8080.5", "receiver_port"),
        ("receiver_port = true", "receiver_port"),
        ("tolerance_s = [1]", "tolerance_s"),
        ('allow_http = "maybe"', "allow_http"),
        ("allow_http = 1", "allow_http"),
        ("home = true", "home"),
        ("base_url = 5", "base_url"),
        ("timeout_s = true", "timeout_s"),
        ('timeout_s = "fast"', "timeout_s"),
        ("max_body = 1e6", "max_body"),
        ("receiver_path = 1", "receiver_path"),
    ],
)
def test_wrong_types_in_the_file(
    xdg: dict[str, Path], tmp_path: Path, text: str, named: str
) -> None:
    config = write_toml(tmp_path / "c.toml", text + "\n")
    with pytest.raises(ConfigError) as info:
        load_settings({}, env={}, config_file=config)
    message = str(info.value)
    assert f"The setting {named} from config file {config} must be a" in message


def test_a_wrong_type_for_the_key_does_not_show_it(xdg: dict[str, Path], tmp_path: Path) -> None:
    config = write_toml(tmp_path / "c.toml", "api_key = 1234567890123456789\n")
    with pytest.raises(ConfigError) as info:
        load_settings({}, env={}, config_file=config)
    assert "1234567890123456789" not in str(info.value)
    assert "(hidden)" in str(info.value)


@pytest.mark.parametrize(
    ("flags", "match"),
    [
        ({"receiver_port": "eighty"}, "receiver_port from the command line must be a whole number"),
        ({"receiver_port": 70000}, "between 0 and 65535"),
        ({"receiver_port": -1}, "between 0 and 65535"),
        ({"receiver_path": "webhooks"}, "must start with '/'"),
        ({"receiver_path": "/a/../b"}, "has a '.' or '..' segment"),
        ({"receiver_path": "/hooks\nX-Evil: 1"}, "has control characters"),
        ({"receiver_path": "/hooks\udcff"}, "has control characters or is not text"),
        ({"receiver_path": "/" + "é" * 200}, "longer than 1000 characters in a URL"),
        ({"tolerance_s": -1}, "zero or more"),
        ({"max_body": 0}, "at least 1 byte"),
        ({"retention_days": -1}, "from 0 (keep everything) to 36,500 days"),
        ({"retention_days": 99_999_999_999}, "from 0 (keep everything) to 36,500 days"),
        ({"timeout_s": 0}, "more than 0 seconds"),
        ({"timeout_s": -2.5}, "more than 0 seconds"),
        ({"timeout_s": "inf"}, "more than 0 seconds"),
        ({"allow_http": "perhaps"}, "allow_http"),
        ({"colour": "blue"}, "Unknown setting colour"),
    ],
)
def test_invalid_values_are_clear_errors(xdg: dict[str, Path], flags: Any, match: str) -> None:
    with pytest.raises(ConfigError, match=match.replace("(", r"\(").replace(")", r"\)")):
        load_settings(flags, env={})


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("[receiver]\nport = 99999\n", "between 0 and 65535, got 99999"),
        ("[receiver]\ntolerance = -5\n", "zero or more seconds"),
        ('[receiver]\npath = "/a/../b"\n', "'.' or '..' segment"),
        ("retention_days = -1\n", "retention_days must be from 0"),
    ],
)
def test_a_value_out_of_range_in_the_config_file_says_it_came_from_there(
    xdg: dict[str, Path], tmp_path: Path, text: str, match: str
) -> None:
    config = write_toml(tmp_path / "c.toml", text)
    with pytest.raises(ConfigError) as info:
        load_settings({}, env={}, config_file=config)
    message = str(info.value)
    assert match in message and message.endswith(f" (set in the config file {config}).")


def test_env_text_is_parsed(xdg: dict[str, Path]) -> None:
    settings = load_settings({"allow_http": "yes", "receiver_port": "8080"}, env={})
    assert settings.allow_http is True and settings.receiver_port == 8080


@pytest.mark.parametrize("bad", ["wp_live abc", "wp_live_\x00abc", "wp_live_ключ", "a\tb"])
def test_an_unusable_api_key_is_refused_without_showing_it(xdg: dict[str, Path], bad: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings({}, env={"WALLETPASS_API_KEY": bad})
    assert bad not in str(info.value)
    assert "API key" in str(info.value)


def test_surrounding_whitespace_of_the_key_is_dropped(xdg: dict[str, Path]) -> None:
    settings = load_settings({}, env={"WALLETPASS_API_KEY": f"  {KEY}\n"})
    assert settings.api_key == Secret(KEY)
