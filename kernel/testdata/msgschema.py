"""JSON schemas of the Jupyter messages (protocol 5.3) privnotes sends.

Written from the messaging specification (jupyter_client docs/messaging.rst).
validate(msg) checks the header, the parent header and the content of a
message as jupyter_client hands it over (dates already parsed).
"""

import datetime
import re

import jsonschema

STR = {"type": "string"}
INT = {"type": "integer"}
BOOL = {"type": "boolean"}
OBJ = {"type": "object"}
STRLIST = {"type": "array", "items": STR}
MIME_BUNDLE = {
    "type": "object",
    "propertyNames": {"pattern": r"^[\w.+-]+/[\w.+-]+$"},
    "required": ["text/plain"],
}
MIME_BUNDLE_ANY = {"type": "object", "propertyNames": {"pattern": r"^[\w.+-]+/[\w.+-]+$"}}


def obj(required, optional=None, extra=True):
    props = dict(required)
    props.update(optional or {})
    return {
        "type": "object",
        "properties": props,
        "required": sorted(required),
        "additionalProperties": extra,
    }


STATUS_OK = {"const": "ok"}
ERROR_FIELDS = {"ename": STR, "evalue": STR, "traceback": STRLIST}

CONTENT = {
    # IOPub
    "status": obj({"execution_state": {"enum": ["busy", "idle", "starting"]}}),
    "execute_input": obj({"code": STR, "execution_count": INT}),
    "stream": obj({"name": {"enum": ["stdout", "stderr"]}, "text": STR}),
    "display_data": obj({"data": MIME_BUNDLE, "metadata": OBJ}, {"transient": OBJ}),
    "update_display_data": obj(
        {"data": MIME_BUNDLE, "metadata": OBJ,
         "transient": obj({"display_id": {"type": "string", "minLength": 1}})}),
    "execute_result": obj({"execution_count": INT, "data": MIME_BUNDLE, "metadata": OBJ}),
    "error": obj(ERROR_FIELDS),
    "clear_output": obj({"wait": BOOL}),
    "comm_close": obj({"comm_id": STR, "data": OBJ}),
    # replies
    "kernel_info_reply": obj({
        "status": STATUS_OK,
        "protocol_version": {"type": "string", "pattern": r"^5\.([3-9]|\d\d+)(\.\d+)?$"},
        "implementation": {"const": "privnotes"},
        "implementation_version": STR,
        "language_info": obj({
            "name": {"const": "go"}, "version": STR, "mimetype": {"const": "text/x-go"},
            "file_extension": {"const": ".go"}, "pygments_lexer": {"const": "go"},
            "codemirror_mode": {"const": "go"}, "nbconvert_exporter": STR,
        }),
        "banner": {"type": "string", "minLength": 1},
        "help_links": {"type": "array", "minItems": 1,
                       "items": obj({"text": STR, "url": {"type": "string", "pattern": "^https?://"}})},
    }),
    "complete_reply": obj({"status": STATUS_OK, "matches": STRLIST, "cursor_start": INT,
                           "cursor_end": INT, "metadata": OBJ}),
    "inspect_reply": obj({"status": STATUS_OK, "found": BOOL, "data": MIME_BUNDLE_ANY, "metadata": OBJ}),
    "is_complete_reply": {
        "oneOf": [
            obj({"status": {"const": "incomplete"}, "indent": STR}),
            obj({"status": {"enum": ["complete", "invalid", "unknown"]}}),
        ]
    },
    "history_reply": obj({"status": STATUS_OK, "history": {
        "type": "array",
        "items": {"type": "array", "minItems": 3, "maxItems": 3, "prefixItems": [INT, INT, {}]}}}),
    "comm_info_reply": obj({"status": STATUS_OK, "comms": OBJ}),
    "shutdown_reply": obj({"status": STATUS_OK, "restart": BOOL}),
    "interrupt_reply": obj({"status": STATUS_OK}),
}

# The only payload privnotes sends: help for the pager, as ipykernel's ?.
PAYLOAD = {"type": "array", "maxItems": 1,
           "items": obj({"source": {"const": "page"}, "data": MIME_BUNDLE, "start": INT}, extra=False)}

EXECUTE_REPLY = {
    "oneOf": [
        obj({"status": STATUS_OK, "execution_count": INT, "payload": PAYLOAD,
             "user_expressions": OBJ}),
        obj(dict(ERROR_FIELDS, status={"const": "error"}, execution_count=INT), {"payload": PAYLOAD}),
        obj({"status": {"const": "aborted"}}),
    ]
}

GENERIC_ERROR_REPLY = obj(dict(ERROR_FIELDS, status={"const": "error"}))

HEADER = obj({
    "msg_id": {"type": "string", "minLength": 1},
    "session": {"type": "string", "minLength": 1},
    "username": STR,
    "date": {},  # checked below: jupyter_client parses it into a datetime
    "msg_type": {"type": "string", "minLength": 1},
    "version": {"type": "string", "pattern": r"^5\.\d+$"},
})

ISO8601 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


def _check(instance, schema, what):
    try:
        jsonschema.validate(instance, schema)
    except jsonschema.ValidationError as e:
        raise AssertionError(f"{what} does not match its schema: {e.message}\n  instance: {instance!r}") from None


def validate(msg, error_reply=False):
    """Validate msg; error_reply allows the generic error content for a reply."""
    mtype = msg["header"]["msg_type"]
    _check(msg["header"], HEADER, f"{mtype} header")
    date = msg["header"]["date"]
    if isinstance(date, str):
        assert ISO8601.match(date), f"{mtype} date {date!r} is not ISO 8601"
    else:
        assert isinstance(date, datetime.datetime), f"{mtype} date {date!r}"
        assert date.tzinfo is not None, f"{mtype} date has no timezone"
    if mtype != "status" or msg["content"].get("execution_state") != "starting":
        ph = msg["parent_header"]
        assert ph and ph.get("msg_id"), f"{mtype} has no parent header"
    if mtype == "execute_reply":
        schema = EXECUTE_REPLY
    elif error_reply or mtype not in CONTENT:
        assert mtype.endswith("_reply") and msg["content"].get("status") == "error", \
            f"no schema for {mtype} and it is not an error reply: {msg['content']!r}"
        schema = GENERIC_ERROR_REPLY
    else:
        schema = CONTENT[mtype]
    _check(msg["content"], schema, f"{mtype} content")
