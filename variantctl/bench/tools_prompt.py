"""The first seed's tool-calling request: a coding-agent system prompt with 29 tools.

The seed measured prefix caching with it (first request cached 0, later ones ~2,200 of
~2,200 prompt tokens cached), so the tools and system prompt are identical for every
request and only the user's question differs — the prefix is what the cache can reuse.
The schemas are ordinary OpenAI function tools, built from a compact table.
"""

from __future__ import annotations

from variantctl.jsontypes import JsonObject

SYSTEM = (
    "You are a coding agent working in a Linux workspace. Use the tools to inspect and "
    "change files, run commands and search the code base. Think before acting, prefer "
    "small verifiable steps, and report what you changed."
)

QUESTIONS = (
    "Find where the HTTP retry policy is configured and explain it.",
    "List the Python files under src/ that import asyncio.",
    "Run the unit tests for the parser module and summarise failures.",
    "Rename the function load_cfg to load_config everywhere.",
    "Show the last 50 lines of the server log and say why it crashed.",
    "Add a --verbose flag to the CLI entry point.",
    "Which dependencies in pyproject.toml are unpinned?",
    "Create a README section describing the cache directory.",
)

# name, description, ((param, type, description), ...), required params
_TABLE: tuple[tuple[str, str, tuple[tuple[str, str, str], ...], tuple[str, ...]], ...] = (
    ("read_file", "Read a text file and return its content with line numbers.",
     (("path", "string", "File path relative to the workspace root."),
      ("start_line", "integer", "First line to return, 1-based."),
      ("end_line", "integer", "Last line to return, inclusive.")), ("path",)),
    ("write_file", "Create or overwrite a file with the given content.",
     (("path", "string", "File path relative to the workspace root."),
      ("content", "string", "The complete new content of the file.")), ("path", "content")),
    ("edit_file", "Replace one exact occurrence of a string in a file.",
     (("path", "string", "File to edit."), ("old", "string", "Exact text to replace."),
      ("new", "string", "Replacement text.")), ("path", "old", "new")),
    ("delete_file", "Delete a file from the workspace.",
     (("path", "string", "File to delete."),), ("path",)),
    ("move_file", "Move or rename a file.",
     (("source", "string", "Current path."), ("destination", "string", "New path.")),
     ("source", "destination")),
    ("list_directory", "List the entries of a directory, optionally recursively.",
     (("path", "string", "Directory to list."),
      ("recursive", "boolean", "Descend into sub-directories."),
      ("max_entries", "integer", "Stop after this many entries.")), ("path",)),
    ("glob_files", "Find files whose path matches a glob pattern.",
     (("pattern", "string", "Glob such as src/**/*.py."),), ("pattern",)),
    ("grep_search", "Search file contents with a regular expression.",
     (("pattern", "string", "Regular expression."), ("path", "string", "Where to search."),
      ("case_sensitive", "boolean", "Match case exactly."),
      ("max_results", "integer", "Maximum matches to return.")), ("pattern",)),
    ("run_command", "Run a shell command in the workspace and return its output.",
     (("command", "string", "The command line."),
      ("timeout_s", "integer", "Kill the command after this many seconds."),
      ("cwd", "string", "Working directory.")), ("command",)),
    ("run_tests", "Run the project's tests, optionally a subset.",
     (("selector", "string", "Test file, class or function."),
      ("fail_fast", "boolean", "Stop at the first failure.")), ()),
    ("git_status", "Show the working tree status.", (), ()),
    ("git_diff", "Show the diff of the working tree or of a revision range.",
     (("revision", "string", "Revision or range, e.g. HEAD~1..HEAD."),
      ("path", "string", "Limit the diff to this path.")), ()),
    ("git_log", "Show recent commits.",
     (("max_count", "integer", "Number of commits."),
      ("path", "string", "Only commits touching this path.")), ()),
    ("git_commit", "Commit staged changes with a message.",
     (("message", "string", "Commit message."),), ("message",)),
    ("git_checkout_branch", "Create or switch to a branch.",
     (("branch", "string", "Branch name."), ("create", "boolean", "Create it first.")),
     ("branch",)),
    ("python_eval", "Evaluate a Python snippet in a sandbox and return stdout.",
     (("code", "string", "Python source."),), ("code",)),
    ("http_get", "Fetch a URL and return the response body as text.",
     (("url", "string", "The URL."), ("headers", "object", "Extra request headers.")),
     ("url",)),
    ("web_search", "Search the web and return the top results.",
     (("query", "string", "Search query."), ("num_results", "integer", "How many.")),
     ("query",)),
    ("read_logs", "Read a service log, newest lines last.",
     (("service", "string", "Service name."), ("lines", "integer", "How many lines."),
      ("since", "string", "Only lines after this ISO timestamp.")), ("service",)),
    ("list_processes", "List running processes with CPU and memory use.",
     (("filter", "string", "Substring of the command line."),), ()),
    ("kill_process", "Send a signal to a process.",
     (("pid", "integer", "Process id."), ("signal", "string", "Signal name, e.g. TERM.")),
     ("pid",)),
    ("install_package", "Install a package into the project environment.",
     (("name", "string", "Package name."), ("version", "string", "Version specifier.")),
     ("name",)),
    ("format_code", "Format source files with the project's formatter.",
     (("paths", "array", "Files or directories to format."),), ("paths",)),
    ("lint_code", "Run the linter and return its findings.",
     (("paths", "array", "Files or directories to lint."),
      ("fix", "boolean", "Apply safe fixes.")), ()),
    ("type_check", "Run the type checker on the project.",
     (("strict", "boolean", "Use strict mode."),), ()),
    ("open_issue", "Open an issue in the tracker.",
     (("title", "string", "Issue title."), ("body", "string", "Issue description."),
      ("labels", "array", "Labels to attach.")), ("title", "body")),
    ("ask_user", "Ask the user a clarifying question and wait for the answer.",
     (("question", "string", "The question."),), ("question",)),
    ("todo_write", "Replace the task list shown to the user.",
     (("items", "array", "Task descriptions in order."),), ("items",)),
    ("finish", "Report that the task is done, with a summary of the changes.",
     (("summary", "string", "What was changed and why."),), ("summary",)),
)


def tools() -> list[JsonObject]:
    """The 29 tool schemas in OpenAI's function-tool form."""
    out: list[JsonObject] = []
    for name, description, params, required in _TABLE:
        properties: JsonObject = {}
        for pname, ptype, pdesc in params:
            prop: JsonObject = {"type": ptype, "description": pdesc}
            if ptype == "array":
                prop["items"] = {"type": "string"}
            properties[pname] = prop
        out.append({
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": {"type": "object", "properties": properties,
                               "required": list(required)},
            },
        })
    return out
