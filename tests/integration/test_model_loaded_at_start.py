"""The local embedding model is loaded when Alfred starts, not by the first search.

Loading takes longer than a search waits for its query's embedding, so a model loaded on
first use made the first reply after every start search by keywords alone.
"""

from __future__ import annotations

from bot.replay.world import replay_world
from integrations.onnx_embedder import OnnxMiniLMEmbedder
from runtime.settings import Settings
from tests.helpers.cleanup import drop_test_database
from tests.helpers.world import group, viewer

BOB_GROUP = viewer("bob", group("fam"), ["fam"])


async def test_the_first_search_after_a_start_has_its_query_vector(settings: Settings) -> None:
    world = settings.model_copy(update={"mongodb_database": "model_loaded_at_start"})
    async with replay_world(world) as replay:
        services = replay.services
        try:
            assert isinstance(services.embedder, OnnxMiniLMEmbedder)
            assert services.embedder.loaded, "the model was left for the first search to load"
            # Nothing has embedded anything yet: this search is the first use.
            result = await services.retriever.search(BOB_GROUP, "our holiday in Lisbon", limit=5)
            assert result.legs["dense"].startswith("ok"), result.legs
            assert "embed" not in result.legs, result.legs
        finally:
            await drop_test_database(services.mongo.client, "model_loaded_at_start")
