"""The candidates list of a web-app session: markup closing tags are never paths, a
template's or module's `@name` is never a handle, and the list counts what it set aside
by reason, while the identifiers a user would plant (a path, a handle in prose, a UUID,
a ticket) stay.

The sample is written here as Claude Code 2.1 writes a session of work on a Phoenix
LiveView app: user and assistant records chained by parentUuid, a Read tool_use whose
tool_result holds the file's lines numbered `     N→`, an Edit whose input holds JSX, and
a Bash result with HTML.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from types import SimpleNamespace

from foldstudy.study.candidates import (
    candidates,
    candidates_and_set_aside,
    candidates_stage,
    set_aside_rows,
)
from foldstudy.transcripts import read_transcript
from foldstudy.transcripts.identifiers import SET_ASIDE, classify

SESSION_ID = "6f1c2a9e-4b7d-4e15-9c3a-0d82b5e7f164"

PANE_LIVE = """defmodule AppWeb.PaneLive do
  use AppWeb, :live_view

  @default_model "claude-sonnet-4-5"
  @poll_ms 2_500

  @retry_on_conflict(3)
  def mount(%{"id" => id}, _session, socket) do
    {:ok, assign(socket, pane_id: id, session_id: nil, default_model: @default_model)}
  end

  def render(assigns) do
    ~H\"\"\"
    <div id={"pane-#{@pane_id}"} class="pane" phx-hook="PaneScroll">
      <span class="title"><%= @session_id %></span>
      <.button :if={@busy} phx-click="stop">Stop</.button>
      <%= if @show_log do %>
        <pre>{@log_lines}</pre>
      <% end %>
      <p>{@default_model}</p>
    </div>
    \"\"\"
  end
end"""

PANE_HEADER_JSX = """export function PaneHeader({ paneId, onClose }) {
  return (
    <header className="pane-header">
      <button onClick={onClose} aria-label="close">x</button>
      <img src="/images/pane-logo.svg" alt="" />
    </header>
  );
}
"""

CURL_HTML = ('<!DOCTYPE html><html><body><div class="container"><a href="/settings">'
             'Settings</a><section id="panes"></section></div></body></html>')


def numbered(text: str) -> str:
    """A file's text as Claude Code's Read tool returns it (cat -n style, an arrow)."""
    return "\n".join(f"{i:>6}→{line}" for i, line in enumerate(text.split("\n"), start=1))


def claude_code_session(path: Path, turns: list[tuple[str, object]]) -> Path:
    """A Claude Code 2.1 session file: one record a turn, each the child of the one
    before; ("user", text), ("assistant", text), ("tool_use", (name, input)) and
    ("tool_result", text) answering the tool_use before it."""
    lines, parent, last_tool = [], None, None
    for n, (kind, body) in enumerate(turns):
        uid = str(uuid.UUID(int=n + 1))
        rec = {"parentUuid": parent, "isSidechain": False, "userType": "external",
               "cwd": "/home/dev/app", "sessionId": SESSION_ID, "version": "2.1.42",
               "gitBranch": "fix-pane", "uuid": uid,
               "timestamp": f"2026-11-30T09:{n:02d}:00.000Z"}
        if kind == "user":
            rec |= {"type": "user", "message": {"role": "user", "content": body}}
        elif kind == "tool_result":
            rec |= {"type": "user", "message": {"role": "user", "content": [
                {"tool_use_id": last_tool, "type": "tool_result", "content": body}]}}
        else:
            if kind == "tool_use":
                name, tool_input = body
                last_tool = f"toolu_01{n:04d}"
                content = [{"type": "tool_use", "id": last_tool, "name": name,
                            "input": tool_input}]
            else:
                content = [{"type": "text", "text": body}]
            rec |= {"type": "assistant", "message": {
                "model": "claude-sonnet-4-5-20250929", "id": f"msg_01{n:04d}",
                "type": "message", "role": "assistant", "content": content,
                "stop_reason": None, "usage": {"input_tokens": 9, "output_tokens": 41}}}
        lines.append(json.dumps(rec))
        parent = uid
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def web_app_session(tmp_path: Path) -> Path:
    return claude_code_session(tmp_path / f"{SESSION_ID}.jsonl", [
        ("user", f"The pane view crashes when I switch sessions (ticket WEB-4127, session "
                 f"{SESSION_ID}). @dana.okafor owns the LiveView; ask her before merging."),
        ("tool_use", ("Read", {"file_path": "/home/dev/app/lib/app_web/live/pane_live.ex"})),
        ("tool_result", numbered(PANE_LIVE)),
        ("assistant", "The crash is in lib/app_web/live/pane_live.ex: @session_id is nil "
                      "before the first handle_info, so the `</span>` renders empty, and "
                      "@pane_id is read before mount/3 assigns it."),
        ("tool_use", ("Edit", {"file_path": "/home/dev/app/assets/js/pane_header.jsx",
                               "old_string": "<header>\n</header>\n",
                               "new_string": PANE_HEADER_JSX})),
        ("tool_result", "The file /home/dev/app/assets/js/pane_header.jsx has been updated."),
        ("tool_use", ("Bash", {"command": "curl -s localhost:4000/panes"})),
        ("tool_result", CURL_HTML),
        ("assistant", "Fixed and pushed for WEB-4127; @dana.okafor reviews it. The header "
                      "now shows /images/pane-logo.svg and the pane log and/or its title."),
    ])


MARKUP = {"/div", "/span", "/.button", "/pre", "/p", "/header", "/button", "/a",
          "/section", "/body", "/html"}
ATTRIBUTES = {"@default_model", "@poll_ms", "@retry_on_conflict", "@pane_id", "@session_id",
              "@busy", "@show_log", "@log_lines"}


def test_a_web_app_session_lists_no_markup_tag_as_a_path_and_no_attribute_as_a_handle(
        tmp_path):
    rows = {r["token"]: r["class"] for r in candidates(read_transcript(
        web_app_session(tmp_path)))}
    assert not MARKUP & set(rows)
    assert not ATTRIBUTES & set(rows)
    assert {t for t, c in rows.items() if c == "handle"} == {"@dana.okafor"}
    for path in ("lib/app_web/live/pane_live.ex", "/home/dev/app/lib/app_web/live/pane_live.ex",
                 "/home/dev/app/assets/js/pane_header.jsx", "/images/pane-logo.svg"):
        assert rows[path] == "path", path
    assert rows[SESSION_ID] == "uuid"
    assert rows["WEB-4127"] == "ticket"
    assert not {"/settings", "and/or", "mount/3"} & set(rows)


def test_the_list_counts_what_it_set_aside_by_reason(tmp_path):
    _, by_reason = candidates_and_set_aside(read_transcript(web_app_session(tmp_path)))
    assert set(by_reason["markup_tag"]) == MARKUP
    assert set(by_reason["code_attribute"]) == ATTRIBUTES
    assert "/settings" in by_reason["no_directory"]
    assert {"and/or", "mount/3"} <= set(by_reason["words_with_slash"])
    rows = {r["reason"]: r for r in set_aside_rows(by_reason)}
    assert set(rows) == set(SET_ASIDE)
    assert rows["markup_tag"]["tokens"] == len(MARKUP)


def test_the_candidates_rule_writes_the_counts_beside_the_unchanged_columns(tmp_path):
    session = web_app_session(tmp_path)
    out = SimpleNamespace(tsv=tmp_path / "c.tsv", md=tmp_path / "c.md",
                          set_aside=tmp_path / "set_aside.tsv")
    candidates_stage(SimpleNamespace(transcript=str(session)), out,
                     SimpleNamespace(name="pane", scenario={"transcript": str(session)}))
    assert out.tsv.read_text(encoding="utf-8").split("\n")[0] == \
        "token\tclass\tfirst_turn\tcount\tcontext"
    aside = [line.split("\t") for line in out.set_aside.read_text(encoding="utf-8").split(
        "\n") if line]
    assert aside[0] == ["reason", "tokens", "examples", "says"]
    counts = {r[0]: int(r[1]) for r in aside[1:]}
    assert counts["markup_tag"] == len(MARKUP)
    assert counts["code_attribute"] == len(ATTRIBUTES)
    md = out.md.read_text(encoding="utf-8")
    total = sum(counts.values())
    assert f"Set aside {total} token(s)" in md
    assert f"{len(MARKUP)} markup tag" in md


def test_a_handle_in_prose_stays_one_and_an_attribute_in_a_template_is_set_aside():
    """One text at a time: the classifier's own interface (transcripts/identifiers.py)."""
    def handles(text: str) -> dict[str, str]:
        return {t.text: t.set_aside for t in classify(text) if t.cls == "handle"}

    assert handles("Thanks! @ana.li will review; cc (@bo-ops), @cy.x") == {
        "@ana.li": "", "@bo-ops": "", "@cy.x": ""}
    assert handles('<li :for={item <- @items} class={@cls}>{item}</li>') == {
        "@items": "code_attribute", "@cls": "code_attribute"}
    assert handles("  <%= @title %> and @count == 0") == {
        "@title": "code_attribute", "@count": "code_attribute"}
    assert handles("can @ana do it") == {"@ana": ""}
    assert handles("**@ana.li** owns it; | @bo-ops | on call |") == {"@ana.li": "",
                                                                    "@bo-ops": ""}
    assert handles("<%= for item <- @items do %>") == {"@items": "code_attribute"}
    assert handles('import { useQuery } from "@tanstack/react-query"') == {
        "@tanstack": "code_attribute"}
    paths = {t.text: t.set_aside for t in classify(
        'import { Button } from "@/components/ui/button"') if t.cls == "path"}
    assert paths == {"@/components/ui/button": ""}
    tags = {t.text: t.set_aside for t in classify("<div><b>x</b></div> ~/.zshrc /tmp")}
    assert tags == {"/b": "markup_tag", "/div": "markup_tag", "~/.zshrc": "",
                    "/tmp": "no_directory"}


def test_a_whole_token_count_is_the_graders():
    from foldstudy.study.boundary import whole_token_count, whole_token_pattern

    text = "47213 x-47213 (47213) 147213 47213.5 port: 47213. 4721347213 47213"
    for value in ("47213", "x-47213", "213", "47213 x", "4721347213"):
        assert whole_token_count(value, text) == len(whole_token_pattern(value).findall(
            text)), value
    assert whole_token_count("47213", text) == 4


GROUPS_VIEW = '''from django.contrib.auth.decorators import login_required

from .grouping import expand_groups


@expand_groups
@login_required
def group_list(request):
    return render(request, "groups/list.html", {"groups": request.groups})
'''


def test_a_python_decorator_is_no_handle_wherever_its_line_opens(tmp_path):
    """A Django web app's session: the decorator `@expand_groups` is found by grep
    (`views.py:7:@expand_groups`, the definition on a context line `views.py-9-def`),
    written by an Edit (the start of a JSON string, escaped line breaks), and named in
    the assistant's prose. Every occurrence but the prose's decorates a `def` below it,
    so the token is set aside as a code attribute session-wide; a handle stays one."""
    grep = ("app/groups/views.py:7:@expand_groups\napp/groups/views.py-8-@login_required\n"
            "app/groups/views.py-9-def group_list(request):")
    session = claude_code_session(tmp_path / f"{SESSION_ID}.jsonl", [
        ("user", "The group list misses nested groups. @dana.okafor wrote the grouping."),
        ("tool_use", ("Bash", {"command": "grep -rn -A2 '@expand_groups' app/"})),
        ("tool_result", grep),
        ("tool_use", ("Edit", {"file_path": "/home/dev/app/app/groups/views.py",
                               "old_string": "@login_required\ndef group_list(request):",
                               "new_string": GROUPS_VIEW.split("\n\n\n")[1]})),
        ("tool_result", "The file /home/dev/app/app/groups/views.py has been updated."),
        ("assistant", "group_list now runs under @expand_groups; @dana.okafor reviews it."),
    ])
    rows = {r["token"]: r["class"] for r in candidates(read_transcript(session))}
    assert "@expand_groups" not in rows and "@login_required" not in rows
    assert rows["@dana.okafor"] == "handle"

    def handles(text: str) -> dict[str, str]:
        return {t.text: t.set_aside for t in classify(text) if t.cls == "handle"}

    assert handles(grep)["@expand_groups"] == "code_attribute"
    assert handles('{"new_string": "@expand_groups\\n@login_required\\nasync def f():"}'
                   )["@expand_groups"] == "code_attribute"
    assert handles("+@expand_groups\n+class GroupAdmin(admin.ModelAdmin):") == {
        "@expand_groups": "code_attribute"}
    # a name in prose at a line's end decorates nothing
    assert handles("ask @ana\nthen @bo-ops\nthanks") == {"@ana": "", "@bo-ops": ""}
    assert handles("thanks @ana\nclassy work") == {"@ana": ""}
