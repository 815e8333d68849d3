"""
The provider's input errors, for the modules that must import without Airflow.

:mod:`blinkops_provider.exceptions`' classes are Airflow's exceptions, so importing them imports
Airflow (seconds). The checks of a declaration run offline too (``blink-schema validate``, in CI,
imports no Airflow): their modules raise through these builders, which import the exceptions only
when an error is raised.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from blinkops_provider.exceptions import BlinkConfigurationError, BlinkInputError


def input_error(message: str) -> BlinkInputError:
    """Return a :class:`~blinkops_provider.exceptions.BlinkInputError` saying ``message``."""
    from blinkops_provider.exceptions import BlinkInputError

    return BlinkInputError(message)


def configuration_error(message: str) -> BlinkConfigurationError:
    """Return a :class:`~blinkops_provider.exceptions.BlinkConfigurationError` saying ``message``."""
    from blinkops_provider.exceptions import BlinkConfigurationError

    return BlinkConfigurationError(message)


class Problems(ValueError):
    """
    What is wrong with an input, found by a check that imports no Airflow.

    ``message`` (the text a :class:`~blinkops_provider.exceptions.BlinkInputError` says) and ``problems`` (one line per
    problem, each naming its entry where there is one; empty: the message is the one).
    """

    def __init__(self, message: str, problems: tuple[str, ...] | list[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.problems = list(problems) or [message]
