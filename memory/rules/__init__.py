"""The English rules: what a message asks of memory, and formation without a model.

Pure logic, text in and typed results out, shared by every provider:

* text helpers, one job each: :mod:`.text` (cleaning, sentences), :mod:`.addressing`,
  :mod:`.language` (comparison keys, word limits, "is this English?"), :mod:`.verbs`
  (agreement), :mod:`.person` (first to third person), :mod:`.dates`, :mod:`.slots`
  (subject, predicate, object of a fact) and :mod:`.statements` (first-person statements
  worth remembering, with their table in :mod:`.statement_rules`);
* :mod:`.intents`: one module per memory intent, and :func:`.intents.detect_intent`;
* :mod:`.tasks`: one module per task the offline provider answers, mirroring
  :mod:`memory.prompts`.
"""
