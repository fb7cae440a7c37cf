"""The page shell every HTML export shares: escaping, the stylesheet, the step script, the document.

The script is static text: no model text is ever written into it (it reads the page's own elements), so
escaping the page's text is the whole defence. The step control is drawn by the script's class on <html>:
without scripts every step shows, one after the other.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re

CSS = """
:root{--bg:#fff;--fg:#1d2330;--mute:#5b6474;--line:#d6dae1;--card:#f6f7f9;--accent:#2457c5;--pin:#b45309;
--cut:#c62828;--ok:#1b7f3b;--bad:#c62828;--code:#f2f4f7;--kw:#7c3aed;--str:#0f766e;--com:#6b7280;--num:#b45309;
--fn:#1d4ed8}
@media (prefers-color-scheme:dark){:root{--bg:#14171c;--fg:#e3e6eb;--mute:#9aa3b2;--line:#333a45;--card:#1c2027;
--accent:#7aa2ff;--pin:#f0a548;--cut:#ff6b6b;--ok:#5bd087;--bad:#ff6b6b;--code:#1f242c;--kw:#c4a7ff;--str:#5eead4;
--com:#8b93a1;--num:#f0a548;--fn:#93b4ff}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif}
main{max-width:1240px;margin:0 auto;padding:16px}
h1{font-size:1.35rem;margin:.2em 0 .4em}
/* Paths and URLs have no break in them: prose may break anywhere rather than widen the page. */
h1,p,li{overflow-wrap:anywhere}
h2{font-size:1.15rem;margin:.2em 0}
h3{font-size:1rem;margin:.9em 0 .3em}h4{font-size:.95rem;margin:0}
a{color:var(--accent)}
.mute{color:var(--mute)}.ok{color:var(--ok)}.bad{color:var(--bad)}
.badge{display:inline-block;border:1px solid var(--line);border-radius:4px;padding:0 .4em;font-size:.8rem;
margin-right:.3em;color:var(--mute)}
.badge.demo{border-color:var(--pin);color:var(--pin)}
.meta{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,330px),1fr));gap:.1em 1.4em;
margin:.4em 0}
.meta>div{overflow-wrap:anywhere;min-width:0;display:grid;grid-template-columns:5.5em minmax(0,1fr);gap:.6em}
.meta .wide{grid-column:1/-1}.meta .k{color:var(--mute)}
.prose{white-space:pre-wrap;overflow-wrap:anywhere;margin:.2em 0}
math{font-size:1.1em}menclose[notation~=box]{border:1px solid currentColor;padding:.1em .25em}
.math.display{margin:.3em 0;overflow-x:auto}
.math.display math{display:inline math;math-style:normal}.math.display math{font-size:1.25em}
pre.code{background:var(--code);border:1px solid var(--line);border-radius:6px;padding:.5em .7em;overflow-x:auto;
margin:.4em 0;font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:pre}
.code span[class^=k]{color:var(--kw)}.code span[class^=s]{color:var(--str)}.code span[class^=c]{color:var(--com);
font-style:italic}.code span[class^=m]{color:var(--num)}.code .nf,.code .nc,.code .fm{color:var(--fn)}
.code .nb,.code .bp{color:var(--accent)}.code .err{color:inherit}
section.step{border-top:2px solid var(--line);padding-top:.6em;margin-top:1.2em}
.stepgrid{display:grid;grid-template-columns:minmax(0,5fr) minmax(0,7fr);gap:18px;align-items:start}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:.5em .7em;margin:.5em 0}
.card h4 .mute{font-weight:normal}
details>summary{cursor:pointer;color:var(--mute)}
details.fold>summary{list-style:none;color:inherit}details.fold>summary::-webkit-details-marker{display:none}
details.fold .peek{display:block;white-space:pre-wrap;overflow-wrap:anywhere;color:var(--fg);max-height:9em;
overflow:hidden;-webkit-mask-image:linear-gradient(#000 60%,transparent);
mask-image:linear-gradient(#000 60%,transparent)}
details.fold .more{display:inline-block;margin:.2em 0;color:var(--accent)}
details.fold .more::before{content:"▸ "}details.fold[open] .more::before{content:"▾ "}
details.fold[open] .peek{display:none}
svg.graph{width:100%;height:auto;display:block;background:var(--card);border:1px solid var(--line);
border-radius:8px}
svg.graph text{font:12px system-ui,sans-serif;fill:var(--fg)}
svg.graph .node rect{fill:var(--bg);stroke:var(--fg);stroke-width:1.2}
svg.graph .node.inactive rect{stroke:var(--mute);stroke-dasharray:4 3}svg.graph .node.inactive text{fill:var(--mute)}
svg.graph .tier{fill:var(--mute);font-size:11px}
svg.graph .edge path{fill:none;stroke:var(--accent);stroke-width:1.6}
svg.graph .edge text,svg.graph .edge-removed text{font-size:11px;paint-order:stroke;stroke:var(--card);
stroke-width:3px}
svg.graph .edge.pinned path{stroke:var(--pin);stroke-width:3}svg.graph .edge.pinned text{fill:var(--pin)}
svg.graph .dash path{stroke-dasharray:6 4}svg.graph .dot path{stroke-dasharray:2 3}
svg.graph .edge.debate path{stroke-width:3}
svg.graph .edge-removed path{fill:none;stroke:var(--mute);stroke-width:1.2;stroke-dasharray:3 4}
svg.graph .edge-removed text{fill:var(--mute)}
svg.graph .edge-removed.cut path{stroke:var(--cut);stroke-width:1.6}svg.graph .edge-removed.cut text{fill:var(--cut)}
svg.graph .edge-removed:not(.cut){display:none}
body:has(#show-removed:checked) svg.graph .edge-removed{display:inline}
svg.graph .edge-broadcast path{fill:none;stroke:var(--mute);stroke-width:1;opacity:.7}
.legend{font-size:.85rem;color:var(--mute);margin:.3em 0}
table{border-collapse:collapse;margin:.4em 0;font-size:.9rem}
th,td{border:1px solid var(--line);padding:.2em .5em;text-align:left;vertical-align:top}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.tablewrap{overflow-x:auto;max-width:100%}
ul.edges{margin:.2em 0;padding-left:1.2em;font-size:.9rem}
.stepper{display:none}
html.js .stepper{display:flex;gap:.5em;align-items:center;flex-wrap:wrap;position:sticky;top:0;z-index:2;
background:var(--bg);border-bottom:1px solid var(--line);padding:.4em 0;margin-bottom:.4em}
.stepper button{font:inherit;padding:.25em .8em;border:1px solid var(--line);border-radius:6px;
background:var(--card);color:var(--fg);cursor:pointer}
.stepper button:disabled{opacity:.4;cursor:default}
.stepper .where{font-weight:600;min-width:8em}
.stepper input{font:inherit;padding:.2em .5em;border:1px solid var(--line);border-radius:6px;background:var(--bg);
color:var(--fg);width:12em}.stepper .found{display:flex;gap:.3em;flex-wrap:wrap;font-size:.85rem}
.stepper .found button{padding:.1em .5em}
pre.diff{background:var(--code);border:1px solid var(--line);border-radius:6px;padding:.4em .6em;overflow-x:auto;
font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:pre-wrap;overflow-wrap:anywhere}
pre.diff .add{color:var(--ok)}pre.diff .add::before{content:"+ "}pre.diff .del{color:var(--bad)}
pre.diff .del::before{content:"− "}pre.diff .same::before{content:"  "}
pre.diff .hunk{color:var(--mute)}
@media (max-width:600px){.stepper .keys{display:none}.stepper input{width:9em}}
html.js [data-step]:not(.on){display:none}html.js.all [data-step]:not(.on){display:block}
html.js [data-step].stale::before{content:"ended earlier: its last step";display:block;color:var(--mute);
font-size:.85rem}
.columns{display:grid;grid-template-columns:repeat(auto-fit,minmax(330px,1fr));gap:16px;align-items:start}
.columns>.column{min-width:0}
.columns .stepgrid{grid-template-columns:minmax(0,1fr)}
.plots{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}.plot{margin:0;max-width:100%;overflow-x:auto}
.plot svg{max-width:100%;height:auto;display:block}.plot svg text{fill:var(--fg)}
table.grid td{text-align:center}table.grid td:first-child{text-align:left}
table.grid .mark{display:inline-block;min-width:1.2em;font-weight:600}a .mark{text-decoration:underline}
details.timeline{margin:.4em 0}.wf{font-size:.8rem;font-variant-numeric:tabular-nums}
.wf-row{display:grid;grid-template-columns:minmax(6em,11em) minmax(0,1fr) auto;gap:.1em .6em;align-items:center}
.wf-name{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}.wf-tok{color:var(--mute);white-space:nowrap}
.wf-bar{width:100%;height:12px;display:block;background:var(--card);border-radius:2px}
.wf-bar rect.ok{fill:var(--accent)}.wf-bar rect.bad{fill:var(--bad)}.wf-bar line{stroke:var(--mute);stroke-width:1}
.wf-axis{color:var(--mute)}.wf-scale{display:flex;justify-content:space-between}
@media (max-width:600px){.wf-row{grid-template-columns:minmax(0,1fr) auto}.wf-bar,.wf-scale{grid-column:1/-1;
grid-row:2}.wf-row{margin-bottom:.3em}}
.permalink{color:var(--mute);text-decoration:none;font-weight:normal;margin-left:.35em;opacity:.55}
.permalink:hover,.permalink:focus{opacity:1;color:var(--accent)}
[id]{scroll-margin-top:3.4em}
/* A wide screen keeps a step's graph in view beside its outputs while they scroll. */
@media (min-width:761px){main>section.step>.stepgrid>div:first-child{position:sticky;top:3.2em}}
h2 a.own{font-size:.8rem;font-weight:normal;margin-left:.4em}
/* A phone reads the comparison's summary as one card per method, each value beside its column's name. */
@media (max-width:600px){table.summary,table.summary tbody,table.summary tr,table.summary td{display:block}
table.summary tr:first-child{display:none}table.summary tr{border:1px solid var(--line);border-radius:8px;
margin:.5em 0;padding:.3em .5em;background:var(--card)}table.summary td{border:0;padding:.1em 0;text-align:left;
display:grid;grid-template-columns:7em minmax(0,1fr);gap:.5em}
table.summary td::before{content:attr(data-label);color:var(--mute)}table.summary td:first-child{font-weight:600}}
@media (max-width:760px){main{padding:10px}.stepgrid{grid-template-columns:minmax(0,1fr)}
body{font-size:14px}}
/* Printing prints every step, one after the other, in light colours, without the controls. */
@media print{:root{--bg:#fff;--fg:#000;--mute:#444;--line:#bbb;--card:#fff;--code:#f6f6f6}
html.js [data-step]:not(.on){display:block}html.js [data-step].stale::before{content:none}
.stepper,html.js .stepper,.permalink,label.legend,.search{display:none!important}
.stepgrid>div{position:static!important}
section.step{break-before:page}.card,svg.graph,tr{break-inside:avoid}main{max-width:none;padding:0}}
"""

# Steps: of the elements with data-step="N" that share a parent (a session's rounds; a comparison's column),
# the one with the current N shows, else the last one before it (a method that ended sooner keeps its last).
# Buttons, arrow keys (left, right, Home, End) and the address move it: #step-N, or the id of anything inside a
# step (#step-2-Tester, a comparison's #dytopo-step-2), when the page opens and whenever the hash changes.
# Stepping brings the step's top (its graph and goal) under the step bar. "every step" shows them all (the
# browser's find then sees every step); the search box counts a text's matches in each step and offers a button
# per step that has it. Nothing here reads model text as markup: the search compares textContent only and
# writes its results with textContent.
SCRIPT = """
(function(){
var root=document.documentElement;root.classList.add('js');
var els=[].slice.call(document.querySelectorAll('[data-step]'));
var steps=[];els.forEach(function(e){var n=+e.getAttribute('data-step');if(steps.indexOf(n)<0)steps.push(n);});
steps.sort(function(a,b){return a-b;});
var nav=document.querySelector('.stepper');if(!nav||!steps.length){root.classList.remove('js');return;}
var prev=nav.querySelector('.prev'),next=nav.querySelector('.next'),where=nav.querySelector('.where');
var unit=nav.getAttribute('data-unit')||'round';var i=0;
var groups=[];els.forEach(function(e){var g=groups.filter(function(x){return x.p===e.parentNode;})[0];
if(!g){g={p:e.parentNode,els:[]};groups.push(g);}g.els.push(e);});
function show(k){i=Math.max(0,Math.min(steps.length-1,k));var n=steps[i];
groups.forEach(function(g){var best=null;g.els.forEach(function(e){var s=+e.getAttribute('data-step');
if(s<=n&&(!best||s>+best.getAttribute('data-step')))best=e;});
g.els.forEach(function(e){e.classList.toggle('on',e===best);e.classList.toggle('stale',e===best&&+e.getAttribute('data-step')!==n);});});
where.textContent=unit+' '+n+' of '+steps[steps.length-1];prev.disabled=i===0;next.disabled=i===steps.length-1;}
function into(el){var top=el.getBoundingClientRect().top,bar=nav.offsetHeight;
if(top<bar||top>window.innerHeight*0.4)window.scrollBy(0,top-bar-6);}
function step(k){show(k);if(history.replaceState)history.replaceState(null,'','#step-'+steps[i]);
var on=document.querySelector('[data-step].on');if(on)into(on);}
function go(){var id='';try{id=decodeURIComponent(location.hash.slice(1));}catch(e){return;}if(!id)return;
var el=document.getElementById(id),host=el&&el.closest('[data-step]'),m=/(?:^|-)step-(\\d+)$/.exec(id);
var k=host?steps.indexOf(+host.getAttribute('data-step')):m?steps.indexOf(+m[1]):-1;if(k<0)return;show(k);
if(el){for(var d=el;d;d=d.parentElement){if(d.tagName==='DETAILS')d.open=true;}el.scrollIntoView();}}
prev.addEventListener('click',function(){step(i-1);});next.addEventListener('click',function(){step(i+1);});
document.addEventListener('keydown',function(ev){var t=ev.target&&ev.target.tagName;
if(t==='INPUT'||t==='SELECT'||t==='TEXTAREA'||ev.altKey||ev.ctrlKey||ev.metaKey)return;
if(ev.key==='ArrowRight'){step(i+1);ev.preventDefault();}else if(ev.key==='ArrowLeft'){step(i-1);ev.preventDefault();}
else if(ev.key==='Home'){step(0);}else if(ev.key==='End'){step(steps.length-1);}});
window.addEventListener('hashchange',go);show(0);go();
var all=nav.querySelector('.all');all.addEventListener('click',function(){var on=root.classList.toggle('all');
all.textContent=on?'one '+unit:'every '+unit;all.setAttribute('aria-pressed',on?'true':'false');});
var box=nav.querySelector('.search input'),found=nav.querySelector('.found');
box.addEventListener('input',function(){var q=box.value.trim().toLowerCase();found.textContent='';if(q.length<2)return;
var hits=steps.map(function(n){var c=0;els.forEach(function(e){if(+e.getAttribute('data-step')!==n)return;
var t=e.textContent.toLowerCase(),k=t.indexOf(q);while(k>=0){c++;k=t.indexOf(q,k+q.length);}});return[n,c];})
.filter(function(h){return h[1]>0;});if(!hits.length){found.textContent='not found';return;}
hits.forEach(function(h){var b=document.createElement('button');b.type='button';
b.textContent=unit+' '+h[0]+' ('+h[1]+')';b.addEventListener('click',function(){step(steps.indexOf(h[0]));});
found.appendChild(b);});});
})();
"""

SCRIPT_HASH = "sha256-" + base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()


# Characters a reader cannot see that change what they see: C0 and C1 controls (ESC starts a terminal sequence,
# BEL, BS), and the invisible format characters (Unicode category Cf, 14.0), among them the bidi controls:
# U+202E turns "txt.exe" into "exe.txt". Each is shown as a mark instead; tab, newline and carriage return stay.
_HIDDEN = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
    "\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)


def _mark(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x20:
        return chr(0x2400 + code)  # the control pictures: ␛ ␇ ␈
    return "\u2421" if code == 0x7F else f"⟨U+{code:04X}⟩"


def visible(text: str) -> str:
    """``text`` with every control and invisible format character shown as a visible mark."""
    return _HIDDEN.sub(_mark, text)


def esc(text: object) -> str:
    """Text for HTML content or an attribute value (quotes escaped too), invisible characters made visible."""
    return html.escape(visible(str(text)), quote=True)


def permalink(anchor: str) -> str:
    """A link to ``#anchor`` (an id of the page) to copy and share."""
    return f'<a class="permalink" href="#{esc(anchor)}" title="link to this" aria-label="link to this">#</a>'


def anchor_id(*parts: str) -> str:
    """An id (and URL fragment) from names: spaces become underscores, the rest stays as written."""
    return "-".join("_".join(str(p).split()) for p in parts if p)


def stepper(unit: str) -> str:
    """The step control; the script shows it (without scripts every step is on the page)."""
    return (f'<nav class="stepper" data-unit="{esc(unit)}" aria-label="steps">'
            '<button type="button" class="prev" title="previous (←)">◀ previous</button>'
            '<span class="where"></span>'
            '<button type="button" class="next" title="next (→)">next ▶</button>'
            f'<button type="button" class="all" aria-pressed="false" title="show every {esc(unit)} on the page">'
            f"every {esc(unit)}</button>"
            f'<label class="search"><input type="search" placeholder="search" title="search every {esc(unit)}" '
            'aria-label="search every step"></label><span class="found" aria-live="polite"></span>'
            '<span class="mute keys">← → keys</span></nav>')


def removed_toggle() -> str:
    """Show the edges k_in, cycle breaking or a method removed (CSS only: works with scripts off)."""
    return ('<label class="legend"><input type="checkbox" id="show-removed"> show removed edges '
            '(dashed, with the reason); cut edges always show</label>')


def document(title: str, body: str, *, steps: bool = True) -> str:
    """A whole page. Its CSP forbids every load from elsewhere and every script but ours (by its hash): even a
    reply that got past the escaping could neither run nor fetch anything."""
    csp = (f"default-src 'none'; style-src 'unsafe-inline'; script-src '{SCRIPT_HASH}'; img-src data:; "
           "form-action 'none'; base-uri 'none'")
    script = f"<script>{SCRIPT}</script>" if steps else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        '<meta name="generator" content="swarm-tui">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>\n<body><main>\n{body}\n</main>{script}</body></html>\n"
    )
