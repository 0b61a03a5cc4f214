"""Placeholder until the subcommand lands."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    subparsers.add_parser("render", help="(not yet available)")


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError
