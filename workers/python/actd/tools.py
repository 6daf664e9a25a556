"""Tools: what an activity takes (PROTOCOL.md section 2.1).

A worker declares, in ``READY``, for each activity it serves: a
``description``, a ``params`` JSON Schema (draft 2020-12) that actd checks
every call against, and an ``outputPath`` (``{"const": path}`` prescribes
it, ``{"pattern": regex}`` constrains it). This module builds those
declarations, deriving the schema from a handler's type hints when none is
given:

* a handler ``(params, task)`` (the classic form: its first parameter
  named ``params``, or not annotated, or the one parameter besides the
  task annotated ``dict``, ``Dict[...]``, ``Mapping[...]`` or ``Any``)
  takes the params object as it is; nothing is derived;
* a handler whose parameters are all annotated, e.g.
  ``def weather(city: str, days: int = 3) -> dict``, takes them as keyword
  arguments; the schema is an object with one property per parameter
  (those without a default are required, no other key is allowed); a
  parameter annotated :class:`actd.Task` (or named ``task``) gets the task;
* a handler whose one parameter (besides the task) is annotated with a
  dataclass takes an instance of it, built from the params; the schema
  comes from the dataclass's fields the same way.

Types understood: ``str``, ``int``, ``float``, ``bool``, ``None``,
``Any``, ``list[X]`` / ``List[X]``, ``dict[str, X]`` / ``Dict[str, X]``,
``Optional[X]``, ``Union[...]``, ``Literal[...]`` and nested dataclasses.
Anything else raises :class:`TypeError` at registration, never at a call.
The function's docstring is the description unless one is given.
"""

import dataclasses
import inspect
import typing
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

__all__ = ["schema_of", "Tool"]

_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean"}


def schema_of(annotation: Any) -> Dict[str, Any]:
    """The JSON Schema of a type annotation; TypeError for a type that has
    none here."""
    if annotation is Any or annotation is inspect.Parameter.empty:
        return {}
    if annotation is None or annotation is type(None):
        return {"type": "null"}
    if annotation in _SCALARS:
        return {"type": _SCALARS[annotation]}
    if dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
        return _dataclass_schema(annotation)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin is Union or _is_union_type(origin):
        others = [arg for arg in args if arg is not type(None)]
        if len(others) == 1 and len(args) == 2:
            return {"anyOf": [schema_of(others[0]), {"type": "null"}]}
        return {"anyOf": [schema_of(arg) for arg in args]}
    if origin in (list, List) or annotation in (list, List):
        items = schema_of(args[0]) if args else {}
        return {"type": "array", "items": items} if items else {"type": "array"}
    if origin in (dict, Dict) or annotation in (dict, Dict):
        if args and args[0] is not str:
            raise TypeError("a dict parameter needs str keys (JSON object keys), not %r"
                            % (args[0],))
        values = schema_of(args[1]) if len(args) == 2 else {}
        schema: Dict[str, Any] = {"type": "object"}
        if values:
            schema["additionalProperties"] = values
        return schema
    raise TypeError("no JSON Schema for the type %r (use str, int, float, bool, list, dict, "
                    "Optional, Union, Literal, Any or a dataclass)" % (annotation,))


def _is_union_type(origin: Any) -> bool:
    """True for ``X | Y`` (types.UnionType, Python 3.10 and later)."""
    union_type = getattr(__import__("types"), "UnionType", None)
    return union_type is not None and origin is union_type


def _object_schema(fields: List[Tuple[str, Any, bool, Any]]) -> Dict[str, Any]:
    """An object schema from (name, annotation, has_default, default)."""
    properties: Dict[str, Any] = {}
    required: List[str] = []
    for name, annotation, has_default, default in fields:
        schema = dict(schema_of(annotation))
        if has_default and _is_json(default):
            schema["default"] = default
        properties[name] = schema
        if not has_default:
            required.append(name)
    result: Dict[str, Any] = {"type": "object", "properties": properties,
                              "additionalProperties": False}
    if required:
        result["required"] = required
    return result


def _is_json(value: Any) -> bool:
    """True for a value JSON can carry as it is."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_is_json(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and _is_json(item) for key, item in value.items())
    return False


def _dataclass_schema(cls: type) -> Dict[str, Any]:
    """The object schema of a dataclass's init fields."""
    hints = typing.get_type_hints(cls)
    fields = []
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        has_default = (field.default is not dataclasses.MISSING
                       or field.default_factory is not dataclasses.MISSING)  # type: ignore
        default = field.default     # MISSING for a factory: not JSON, not shown
        fields.append((field.name, hints.get(field.name, Any), has_default, default))
    return _object_schema(fields)


def _build(annotation: Any, value: Any) -> Any:
    """value (JSON, already valid against the schema) as annotation: the
    dataclasses of the annotation are instantiated, the rest stays."""
    if dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
        if not isinstance(value, dict):
            return value
        hints = typing.get_type_hints(annotation)
        return annotation(**{key: _build(hints.get(key, Any), item)
                             for key, item in value.items()})
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (list, List) and args and isinstance(value, list):
        return [_build(args[0], item) for item in value]
    if origin in (dict, Dict) and len(args) == 2 and isinstance(value, dict):
        return {key: _build(args[1], item) for key, item in value.items()}
    if (origin is Union or _is_union_type(origin)) and value is not None:
        for arg in args:
            if dataclasses.is_dataclass(arg) and isinstance(value, dict):
                return _build(arg, value)
    return value


def _is_params_object(annotation: Any) -> bool:
    """True for the annotation of a handler's one parameter that takes the
    params object whole: Any, dict, Dict[...], Mapping[...]."""
    import collections.abc
    origin = typing.get_origin(annotation) or annotation
    return annotation is Any or origin in (dict, Dict, collections.abc.Mapping,
                                           typing.Mapping, collections.abc.MutableMapping)


def _is_task(parameter: inspect.Parameter, hints: Dict[str, Any]) -> bool:
    """True for the parameter that receives the task."""
    annotation = hints.get(parameter.name)
    if annotation is not None and getattr(annotation, "__name__", "") == "Task" \
            and getattr(annotation, "__module__", "").startswith("actd"):
        return True
    return parameter.name == "task" and annotation is None


class Tool:
    """One activity's handler and its declaration: ``call(params, task)``
    runs the handler in the form its signature asks for, ``declaration()``
    is what ``READY`` carries (None when there is nothing to declare)."""

    def __init__(self, handler: Callable[..., Any], description: Optional[str] = None,
                 params: Optional[Dict[str, Any]] = None,
                 output_path: Union[str, Dict[str, str], None] = None) -> None:
        """Inspect handler; TypeError when its hints have no schema, or
        ValueError for a bad output_path."""
        self.handler = handler
        self.description: Optional[str] = description
        if self.description is None:
            doc = inspect.getdoc(handler)
            self.description = doc.strip() if doc else None
        self.output_path = _output_path(output_path)
        self._mode = "classic"
        self._one_argument = False          # Classic, without the task
        self._task_name: Optional[str] = None
        self._hints: Dict[str, Any] = {}
        derived = self._inspect()
        self.params: Optional[Dict[str, Any]] = params if params is not None else derived

    def _inspect(self) -> Optional[Dict[str, Any]]:
        """Choose the calling form; the derived schema (None for classic)."""
        try:
            signature = inspect.signature(self.handler)
        except (TypeError, ValueError):
            return None
        try:
            hints = typing.get_type_hints(self.handler)
        except Exception:  # noqa: BLE001 - unresolvable hints: classic form
            return None
        self._hints = hints
        parameters = [parameter for parameter in signature.parameters.values()
                      if parameter.kind in (parameter.POSITIONAL_OR_KEYWORD,
                                            parameter.KEYWORD_ONLY)]
        if len(parameters) != len(signature.parameters):
            return None         # *args or **kwargs: classic
        rest = []
        for parameter in parameters:
            if self._task_name is None and _is_task(parameter, hints):
                self._task_name = parameter.name
            else:
                rest.append(parameter)
        if not rest and len(parameters) < 2:
            self._mode = "keywords"         # Takes nothing (but perhaps the task)
            return _object_schema([])
        if (not rest or rest[0].name == "params" or any(p.name not in hints for p in rest)
                or (len(rest) == 1 and _is_params_object(hints[rest[0].name]))):
            self._task_name = None
            self._one_argument = len(parameters) == 1
            return None
        if len(rest) == 1 and dataclasses.is_dataclass(hints[rest[0].name]):
            self._mode = "dataclass"
            self._argument = rest[0].name
            return schema_of(hints[rest[0].name])
        self._mode = "keywords"
        return _object_schema([(p.name, hints[p.name], p.default is not p.empty, p.default)
                               for p in rest])

    def call(self, params: Any, task: Any) -> Any:
        """Run the handler for a task's params."""
        if self._mode == "classic":
            return self.handler(params) if self._one_argument else self.handler(params, task)
        arguments: Dict[str, Any] = {}
        if self._mode == "dataclass":
            arguments[self._argument] = _build(self._hints[self._argument], params)
        else:
            if not isinstance(params, dict):
                raise TypeError("the params are not an object")
            arguments = {key: _build(self._hints.get(key, Any), value)
                         for key, value in params.items()}
        if self._task_name is not None:
            arguments[self._task_name] = task
        return self.handler(**arguments)

    def declaration(self) -> Optional[Dict[str, Any]]:
        """The tool's entry in ``READY``'s ``tools`` (None: nothing known)."""
        entry: Dict[str, Any] = {}
        if self.description:
            entry["description"] = self.description
        if self.params is not None:
            entry["params"] = self.params
        if self.output_path is not None:
            entry["outputPath"] = self.output_path
        return entry or None


def _output_path(value: Union[str, Dict[str, str], None]) -> Optional[Dict[str, str]]:
    """A str prescribes the output path; a dict is ``{"const": ...}`` or
    ``{"pattern": ...}``."""
    if value is None:
        return None
    if isinstance(value, str):
        return {"const": value}
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in ("const", "pattern") \
            and isinstance(next(iter(value.values())), str):
        return dict(value)
    raise ValueError("output_path is a path (prescribed), {'const': path} or "
                     "{'pattern': regex}")
