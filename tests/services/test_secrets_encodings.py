"""SPEC §11: a key echoed by a server, in any spelling, is scrubbed from what the workbench keeps.

A property test draws realistic keys and echoes each in every spelling a server uses (as is, in
another case, JSON ``\\uXXXX`` and ``\\/`` escapes of any subset of its characters, URL escapes of
any subset, HTML entities, base64 of the key or of a longer text holding it at any alignment, in
either alphabet, padded or not), inside JSON bodies and prose, then checks that nothing left after
``scrub`` decodes back to the key (``tests/support/secret_search.py`` decodes every way a reader
might). Each example first checks that the unscrubbed text does leak, so the test can fail.
"""

from __future__ import annotations

import base64
import json
import logging
import random
import string

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.support.secret_search import leaks
from workbench.services.llm.secrets import REDACTED, SecretFilter, scrub, scrub_value

URLSAFE = string.ascii_letters + string.digits + "_-"
BASE64ISH = string.ascii_letters + string.digits + "+/"  # keys such as AWS secrets hold / and +

keys = st.one_of(
    st.text(URLSAFE, min_size=16, max_size=100),
    st.builds(lambda tail: "sk-" + tail, st.text(URLSAFE, min_size=13, max_size=97)),
    st.builds(lambda tail: "sk-proj-" + tail, st.text(URLSAFE, min_size=8, max_size=92)),
    st.text(BASE64ISH, min_size=16, max_size=100),
)


# -- the spellings a server may echo a key in ----------------------------------------------------

def _some(rng: random.Random, key: str, form) -> str:
    """Each character of ``key`` in ``form`` or left as it is, at random (never all left as is)."""
    chosen = [rng.random() < 0.5 for _ in key]
    chosen[rng.randrange(len(key))] = True
    return "".join(form(c, rng) if pick else c for c, pick in zip(key, chosen))


def _hex(value: int, width: int, rng: random.Random) -> str:
    text = f"{value:0{width}x}"
    return text.upper() if rng.random() < 0.5 else text


def json_escapes(key, rng):
    return _some(rng, key, lambda c, r: "\\u" + _hex(ord(c), 4, r)).replace("/", "\\/")


def percent_escapes(key, rng):
    return _some(rng, key, lambda c, r: "%" + _hex(ord(c), 2, r))


def html_entities(key, rng):
    return _some(rng, key, lambda c, r: f"&#x{_hex(ord(c), 2, r)};" if r.random() < 0.5 else f"&#{ord(c)};")


def cases(key, rng):
    return rng.choice([key.upper(), key.lower(), key.swapcase(),
                       "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in key)])


def _b64(data: bytes, rng: random.Random) -> str:
    text = (base64.urlsafe_b64encode if rng.random() < 0.5 else base64.b64encode)(data).decode()
    return text.rstrip("=") if rng.random() < 0.5 else text


def base64_key(key, rng):
    return _b64(key.encode(), rng)


def base64_bearer(key, rng):
    return _b64(f"Bearer {key}".encode(), rng)


def base64_basic(key, rng):
    """``Basic base64(user:key)``, the user of any length, so the key falls at every alignment."""
    return "Basic " + _b64(f"{'u' * rng.randrange(0, 7)}:{key}".encode(), rng)


def base64_inside(key, rng):
    """The key somewhere inside a longer text that is base64'd whole (a JSON header, say)."""
    before = json.dumps({"auth": "x" * rng.randrange(0, 5)})[:-2]
    return _b64(f'{before}", "key": "{key}", "n": {rng.randrange(1000)}}}'.encode(), rng)


def base64_upper(key, rng):
    return _b64(f"Bearer {key.upper()}".encode(), rng)


def base64_in_json(key, rng):
    """base64 as PHP's json_encode writes it: every / escaped as \\/."""
    return base64.b64encode(f"Bearer {key}".encode()).decode().replace("/", "\\/")


def base64_url_escaped(key, rng):
    return "".join(f"%{ord(c):02X}" if c in "+/=" else c for c in base64.b64encode(f"x:{key}".encode()).decode())


def as_is(key, rng):
    return key


def double_json(key, rng):
    """The JSON-escaped key inside a JSON string again (\\\\u002d)."""
    return json.dumps(json_escapes(key, rng))[1:-1]


SPELLINGS = [as_is, cases, json_escapes, percent_escapes, html_entities, base64_key, base64_bearer,
             base64_basic, base64_inside, base64_upper, base64_in_json, base64_url_escaped, double_json]


# -- where the echo sits ------------------------------------------------------------------------

def in_error_body(echo: str, rng: random.Random) -> str:
    """An OpenAI-style 401 body written by hand (the echo inside a JSON string, as it is)."""
    return ('{"error": {"message": "Incorrect API key provided: ' + echo + '. You can find your API key at '
            'https:\\/\\/example.com\\/keys.", "type": "invalid_request_error", "code": "invalid_api_key"}}')


def in_json_dumps(echo: str, rng: random.Random) -> str:
    """The echo as a value that json.dumps escaped again (backslashes doubled)."""
    return json.dumps({"detail": f"header was {echo}", "headers": {"authorization": echo}, "n": [1, 2]})


def in_prose(echo: str, rng: random.Random) -> str:
    words = ["the", "server", "said", "no", "key", "Bearer", "\\n", "%20", "&amp;", "QmVhcmVy"]
    left = " ".join(rng.choice(words) for _ in range(rng.randrange(0, 12)))
    right = " ".join(rng.choice(words) for _ in range(rng.randrange(0, 12)))
    return f"{left} {echo} {right}".strip()


PLACES = [in_error_body, in_json_dumps, in_prose]


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=keys, spelling=st.sampled_from(SPELLINGS), place=st.sampled_from(PLACES), rng=st.randoms())
@example(key="sk-proj-Ab3_xY9-qQ7zLm2Np4Rs8Tv6Wu1Kj5Hd", spelling=base64_basic, place=in_error_body,
         rng=random.Random(1))
def test_no_spelling_of_a_key_survives_the_scrub(key, spelling, place, rng):
    text = place(spelling(key, rng), rng)
    assert leaks(text, key), "the example must hold the key (or the test proves nothing)"
    clean = scrub(text, [key])
    assert not leaks(clean, key), clean
    assert REDACTED in clean
    if place is not in_prose:  # a JSON body stays JSON: the record can still be read
        json.loads(clean)


@settings(max_examples=150, deadline=None)
@given(key_a=keys, key_b=keys, rng=st.randoms())
def test_several_keys_in_several_spellings_in_one_body(key_a, key_b, rng):
    body = json.dumps({"a": json_escapes(key_a, rng), "b": base64_bearer(key_b, rng),
                       "c": percent_escapes(key_b, rng), "d": cases(key_a, rng)})
    clean = scrub(body, [key_a, key_b, None, "short"])
    assert not leaks(clean, key_a) and not leaks(clean, key_b)
    json.loads(clean)


@settings(max_examples=200, deadline=None)
@given(key=keys, other=st.text(string.printable, max_size=300))
def test_a_text_without_the_key_is_left_alone(key, other):
    if leaks(other, key):
        return
    assert scrub(other, [key]) == other


def test_what_surrounds_an_echo_is_kept():
    key = "sk-proj-Ab3_xY9-qQ7zLm2Np4Rs8Tv6Wu1Kj5Hd"
    escaped = key.replace("-", "\\u002D")
    assert scrub(f'{{"message": "bad key {escaped}!"}}', [key]) == '{"message": "bad key [REDACTED]!"}'
    assert scrub(f"key=%{ord('s'):02x}{key[1:]}&x=1", [key]) == "key=[REDACTED]&x=1"
    bearer = base64.b64encode(f"Bearer {key}".encode()).decode()
    clean = scrub(f"Authorization: Basic {bearer}", [key])
    # The characters that carry "Bearer " survive; the ones made of the key do not.
    assert clean.startswith("Authorization: Basic QmVhcmVy") and REDACTED in clean and not leaks(clean, key)


def test_a_backslash_before_a_key_goes_with_it_so_json_stays_json():
    key = "nXa9b8c7d6e5f4g3h2"  # starts with "n": "\\n" + the key's tail reads like the key
    body = json.dumps({"m": f"line\n{key[1:]} and {key}"})
    clean = scrub(body, [key])
    json.loads(clean)
    assert not leaks(clean, key)


def test_scrub_value_and_the_log_filter_use_every_spelling(caplog):
    key = "sk-live-0123456789abcdefABCDEF"
    b64 = base64.b64encode(f"Bearer {key}".encode()).decode()
    assert scrub_value({"raw": [b64, key.upper()]}, [key]) == {"raw": [scrub(b64, [key]), REDACTED]}
    secret_filter = SecretFilter()
    secret_filter.remember(key)
    logger = logging.getLogger("rwb.test.secret_encodings")
    logger.addFilter(secret_filter)
    try:
        with caplog.at_level(logging.INFO, logger=logger.name):
            logger.info("echoed %s and %s", key.replace("-", "%2d"), b64)
    finally:
        logger.removeFilter(secret_filter)
    assert caplog.records and not leaks(caplog.text, key)
