"""The offline LLM provider: deterministic rules behind the ``memory.llm.LLM`` port.

Modules, one concern each: :mod:`.provider` (the port and dispatch), :mod:`.extract`
(facts), :mod:`.statements` (statement rules), :mod:`.person` (first → third person),
:mod:`.dates`, :mod:`.decide` and :mod:`.slots` (update decisions), :mod:`.reflect`,
:mod:`.consolidate`, :mod:`.reply` (chat text) and :mod:`.language` (text helpers).
"""

from integrations.offline_llm.provider import OfflineLLM
from integrations.offline_llm.reply import OFFLINE_NOTICE, compose_reply

__all__ = ["OFFLINE_NOTICE", "OfflineLLM", "compose_reply"]
