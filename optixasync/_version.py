"""The package version, in one place (read by ``optixasync --version`` and the build)."""

__version__ = "0.2.0.dev0"
