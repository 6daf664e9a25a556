"""Tools (PROTOCOL.md section 2.1): what the Python worker declares in
READY (explicit, or derived from type hints and dataclasses), and what
Client.tools() reads back from the real actd (TOOLS)."""

import asyncio
import dataclasses
import unittest
from typing import Any, Dict, List, Literal, Optional

from support import TIMEOUT, Actd, running, wait_until
from harness import actd_with_config

import actd
import actd.aio
from actd.tools import Tool, schema_of


@dataclasses.dataclass
class Place:
    city: str
    country: Optional[str] = None


@dataclasses.dataclass
class Forecast:
    place: Place
    days: int = 3
    units: Literal["metric", "imperial"] = "metric"
    tags: List[str] = dataclasses.field(default_factory=list)


def weather(city: str, days: int = 3, hourly: bool = False,
            units: Literal["metric", "imperial"] = "metric",
            scale: Optional[float] = None, tags: Optional[List[str]] = None,
            extra: Dict[str, int] = None) -> Dict[str, Any]:  # type: ignore[assignment]
    """The weather in a city."""
    return {"city": city, "days": days, "hourly": hourly, "units": units,
            "scale": scale, "tags": tags, "extra": extra}


def forecast(request: Forecast, task: actd.Task) -> Dict[str, Any]:
    """A forecast for a place."""
    return {"city": request.place.city, "country": request.place.country,
            "days": request.days, "units": request.units, "tags": request.tags,
            "context": task.context, "is_place": isinstance(request.place, Place)}


class DerivationTest(unittest.TestCase):
    """The schema a handler's annotations give, without a broker."""

    def test_scalars_and_containers(self) -> None:
        self.assertEqual(schema_of(str), {"type": "string"})
        self.assertEqual(schema_of(int), {"type": "integer"})
        self.assertEqual(schema_of(float), {"type": "number"})
        self.assertEqual(schema_of(bool), {"type": "boolean"})
        self.assertEqual(schema_of(List[int]), {"type": "array", "items": {"type": "integer"}})
        self.assertEqual(schema_of(list), {"type": "array"})
        self.assertEqual(schema_of(Dict[str, float]),
                         {"type": "object", "additionalProperties": {"type": "number"}})
        self.assertEqual(schema_of(Optional[str]),
                         {"anyOf": [{"type": "string"}, {"type": "null"}]})
        self.assertEqual(schema_of(Literal["a", "b"]), {"enum": ["a", "b"]})
        self.assertEqual(schema_of(Any), {})

    def test_an_unknown_type_is_refused_at_registration(self) -> None:
        def bad(when: complex) -> None:
            pass
        with self.assertRaises(TypeError):
            Tool(bad)
        with self.assertRaises(TypeError):
            schema_of(Dict[int, str])

    def test_keyword_handler(self) -> None:
        tool = Tool(weather)
        self.assertEqual(tool.description, "The weather in a city.")
        params = tool.params
        assert params is not None
        self.assertEqual(params["type"], "object")
        self.assertEqual(params["required"], ["city"])
        self.assertIs(params["additionalProperties"], False)
        self.assertEqual(params["properties"]["city"], {"type": "string"})
        self.assertEqual(params["properties"]["days"], {"type": "integer", "default": 3})
        self.assertEqual(params["properties"]["units"],
                         {"enum": ["metric", "imperial"], "default": "metric"})
        self.assertEqual(params["properties"]["tags"]["anyOf"][0],
                         {"type": "array", "items": {"type": "string"}})
        self.assertEqual(tool.call({"city": "Oslo", "days": 2}, None)["days"], 2)

    def test_dataclass_handler(self) -> None:
        tool = Tool(forecast)
        params = tool.params
        assert params is not None
        self.assertEqual(params["required"], ["place"])
        self.assertEqual(params["properties"]["place"]["required"], ["city"])
        self.assertEqual(params["properties"]["place"]["properties"]["country"],
                         {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None})
        self.assertNotIn("default", params["properties"]["tags"])

    def test_classic_handlers_derive_nothing(self) -> None:
        def classic(params: Dict[str, Any], task: actd.Task) -> Any:
            return params

        def other_names(request: Dict[str, Any], t: actd.Task) -> Any:
            return request

        def no_task(data: dict) -> Any:
            return data

        self.assertIsNone(Tool(classic).params)
        self.assertIsNone(Tool(other_names).params)
        self.assertEqual(Tool(other_names).call({"a": 2}, None), {"a": 2})
        self.assertIsNone(Tool(no_task).params)
        self.assertEqual(Tool(no_task).call({"a": 3}, None), {"a": 3})
        self.assertIsNone(Tool(lambda params, task: params).params)
        self.assertEqual(Tool(classic).call({"a": 1}, None), {"a": 1})

    def test_explicit_options_win(self) -> None:
        schema = {"type": "object", "properties": {"q": {"type": "string"}}}
        tool = Tool(weather, description="Other", params=schema, output_path="†state.w")
        self.assertEqual(tool.declaration(), {"description": "Other", "params": schema,
                                              "outputPath": {"const": "†state.w"}})
        self.assertEqual(Tool(weather, output_path={"pattern": "^†notes\\."}).output_path,
                         {"pattern": "^†notes\\."})
        with self.assertRaises(ValueError):
            Tool(weather, output_path={"regex": "x"})


class ToolsTest(unittest.TestCase):
    """Declared in READY, read back with TOOLS, calls run through them."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.broker = Actd()
        cls.broker.__enter__()
        cls.client = actd.Client(cls.broker.client_endpoint, timeout=TIMEOUT)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()
        cls.broker.__exit__(None, None, None)

    def test_declared_tools_are_listed_and_called(self) -> None:
        worker = actd.Worker(self.broker.worker_endpoint, name="tools-worker",
                             heartbeat_ms=self.broker.heartbeat_ms, liveness=self.broker.liveness)
        worker.activity("t-weather")(weather)
        worker.activity("t-forecast", output_path="†state.forecast")(forecast)

        @worker.activity("t-note", description="Write a note",
                         params={"type": "object", "required": ["text"],
                                 "properties": {"text": {"type": "string"}}},
                         output_path={"pattern": "^†notes\\.[a-z]+$"})
        def note(params: Dict[str, Any], task: actd.Task) -> str:
            return params["text"]

        with running(self.client, worker):
            tools = self.client.tools()
            self.assertEqual(tools["t-weather"]["description"], "The weather in a city.")
            self.assertEqual(tools["t-weather"]["params"], Tool(weather).params)
            self.assertEqual(tools["t-weather"]["workers"], 1)
            self.assertEqual(tools["t-forecast"]["outputPath"], {"const": "†state.forecast"})
            self.assertEqual(tools["t-note"]["outputPath"], {"pattern": "^†notes\\.[a-z]+$"})
            self.assertEqual(list(self.client.tools("t-note")), ["t-note"])

            outcome = self.client.call("tools-ctx", {"_tool": "t-weather", "city": "Oslo",
                                                     "_outputPath": "†state.weather"})
            self.assertEqual(outcome.status, "ok")
            self.assertEqual(outcome.result, {"city": "Oslo", "days": 3, "hourly": False,
                                              "units": "metric", "scale": None, "tags": None,
                                              "extra": None})
            # The prescribed output path is given to a call that has none
            # (call() learns it from TOOLS and waits for the outcome)
            outcome = self.client.call("tools-ctx", {"_tool": "t-forecast",
                                                     "place": {"city": "Oslo"}, "days": 2},
                                       timeout=TIMEOUT)
            self.assertEqual(outcome.status, "ok")
            self.assertEqual(outcome.written, ["†state.forecast"])
            self.assertEqual(outcome.result["is_place"], True)
            self.assertEqual(outcome.result["context"], "tools-ctx")
            self.assertEqual(self.client.resolve("tools-ctx", "†state.forecast.days"), 2)
            # actd refuses a call its schema does not take
            with self.assertRaises(actd.BadCall):
                self.client.call("tools-ctx", {"_tool": "t-weather", "town": "Oslo",
                                               "_outputPath": "†state.w2"})
            with self.assertRaises(actd.BadCall):
                self.client.call("tools-ctx", {"_tool": "t-note", "text": "x",
                                               "_outputPath": "†state.note"})
            async def read_async() -> Any:
                async with actd.aio.AsyncClient(self.broker.client_endpoint) as client:
                    return await client.tools("t-weather")
            self.assertEqual(asyncio.run(asyncio.wait_for(read_async(), TIMEOUT)),
                             {"t-weather": tools["t-weather"]})
        # Its worker gone, the tool stays known (with 0 workers)
        wait_until(lambda: self.client.tools("t-note")["t-note"]["workers"] == 0,
                   what="t-note without workers")

    def test_unknown_activity_in_strict_mode(self) -> None:
        with actd_with_config("server\n    strict_activities = 1\n") as broker:
            with actd.Client(broker.client_endpoint, timeout=TIMEOUT) as client:
                with self.assertRaises(actd.UnknownActivity):
                    client.submit("strict", {"_tool": "nobody-serves-this"}).accepted(TIMEOUT)
                self.assertEqual(client.tools(), {})
