"""A session, a comparison or a benchmark as one self-contained HTML page.

Inline CSS, inline SVG and a small inline script; no request of any kind leaves the page (no CDN, no web
font, no image URL). With scripts off the page is one long read, round after round; with scripts on a step
control shows one round at a time. Every piece of model text goes through ``page.esc`` (or Pygments, which
escapes too): a reply holding ``<script>`` or ``</svg>`` shows as text.

Modules: ``page`` (the shell, CSS, script, escaping), ``text`` (prose and highlighted code), ``graph_svg``
(a round's graph laid out as the terminal draws it), ``session`` (a whole session).
"""
