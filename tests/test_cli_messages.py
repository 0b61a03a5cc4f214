"""Help and messages that the commands share: no option in a help text that the command lacks, one wording."""

from __future__ import annotations

import re

import pytest

from optixasync import cli


@pytest.mark.parametrize("command", ["view", "dataset"])
def test_help_names_no_option_the_command_lacks(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([command, "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert "--scene" in text and not re.search(r"--frames(?![-\w])", text)


def test_render_and_view_word_a_bad_width_alike(capsys, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "cupy", None)
    messages = []
    for command in ("render", "view"):
        assert cli.main([command, "--width", "0"]) == 2
        messages.append(capsys.readouterr().err.strip().split(": error: ", 1)[1])
    assert messages[0] == messages[1] == "--width must be a positive integer, got 0"
