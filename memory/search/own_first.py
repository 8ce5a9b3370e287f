"""On a first-person query ("when is my mom's birthday?") "my" is the speaker's."""

from __future__ import annotations

import re
from collections.abc import Mapping

from memory.models import Viewer
from memory.search.candidate import Candidate

#: The speaker's own memories whose cosine to a first-person query is within this margin
#: of the best match's rank before a partner's that match as well (the order changes, not
#: the scores). Cosines are absolute, so the margin means the same in every query, and an
#: unrelated memory of theirs is never lifted over a relevant one.
FIRST_PERSON_MARGIN = 0.1
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|me|my|mine|myself)\b", re.IGNORECASE)


def own_first(
    query: str, viewer: Viewer, visible: Mapping[str, Candidate], dense: Mapping[str, float]
) -> set[str]:
    """The viewer's own memories about as close to a first-person query as its best
    match (by cosine), ranked first; none without the dense leg."""
    cosines = {i: dense[i] for i in visible if i in dense}
    if not cosines or not _FIRST_PERSON.search(query):
        return set()
    best = max(cosines.values())
    return {
        i
        for i, cosine in cosines.items()
        if visible[i].partition.owner_user_id == viewer.user_id
        and cosine >= best - FIRST_PERSON_MARGIN
    }
