"""The replay program: the real bot driven by a script of events (``alfred replay``), the
terminal console (``alfred chat``) and the bundled demo (``alfred demo``), all on an
in-process Bot API and a simulated clock.

The script runner's public names are re-exported here (``from bot.replay import …``).
"""

from bot.replay.script import LINE_KINDS, ScriptError, parse_script
from bot.replay.world import Replay, data_folder, replay_world, run_script

__all__ = [
    "LINE_KINDS",
    "Replay",
    "ScriptError",
    "data_folder",
    "parse_script",
    "replay_world",
    "run_script",
]
