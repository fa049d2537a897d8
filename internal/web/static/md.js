// Markdown to HTML for the transcript, with highlighted code and line diffs. Every
// piece of text is escaped before any tag of ours is put around it, and links keep
// only http(s) and mailto addresses, so model output can never become markup.

export function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

const KEYWORDS = new Set(
  ("break case catch class const continue def default defer do elif else enum export extends false fn for from func " +
    "function go if impl import in interface let loop match mut new nil none null package pub return select self " +
    "static struct switch this throw true try type var void while with yield async await lambda pass raise except " +
    "finally not and or is use mod trait where echo fi then done esac local").split(" "),
);

const TOKEN = /(\/\/[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\/)|("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`[^`]*`)|(\b\d[\d_]*(?:\.\d+)?\b)|([A-Za-z_][A-Za-z0-9_]*)/g;

// highlight returns code as HTML with comments, strings, numbers and keywords marked.
export function highlight(code, lang) {
  const hashComments = /^(py|python|sh|bash|shell|zsh|rb|ruby|toml|yaml|yml|make|r|perl)$/.test(lang || "");
  let out = "";
  let last = 0;
  TOKEN.lastIndex = 0;
  for (let m; (m = TOKEN.exec(code)); ) {
    let cls = "";
    if (m[1] !== undefined) {
      if (m[1][0] === "#" && !hashComments) {
        TOKEN.lastIndex = m.index + 1;
        continue;
      }
      cls = "hl-c";
    } else if (m[2] !== undefined) cls = "hl-s";
    else if (m[3] !== undefined) cls = "hl-n";
    else if (KEYWORDS.has(m[4])) cls = "hl-k";
    if (!cls) continue;
    out += esc(code.slice(last, m.index)) + '<span class="' + cls + '">' + esc(m[0]) + "</span>";
    last = m.index + m[0].length;
  }
  return out + esc(code.slice(last));
}

function inline(s) {
  const codes = [];
  s = s.replace(/`([^`\n]+)`/g, (_, c) => {
    codes.push("<code>" + esc(c) + "</code>");
    return "\u0000" + (codes.length - 1) + "\u0000";
  });
  s = esc(s)
    .replace(/\[([^\]\n]+)\]\(((?:https?:\/\/|mailto:)[^\s)]+)\)/g, '<a href="$2" rel="noopener noreferrer" target="_blank">$1</a>')
    .replace(/\*\*([^*\n]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[\s(])\*([^*\n]+)\*(?=[\s).,!?:;]|$)/g, "$1<em>$2</em>")
    .replace(/(^|[\s(])_([^_\n]+)_(?=[\s).,!?:;]|$)/g, "$1<em>$2</em>");
  return s.replace(/\u0000(\d+)\u0000/g, (_, i) => codes[+i]);
}

// markdown renders text (a whole message, or one still streaming: an open code fence
// is shown as code so far).
export function markdown(text) {
  const lines = text.split("\n");
  let html = "";
  let para = [];
  let list = null; // "ul" | "ol"
  const flush = () => {
    if (para.length) html += "<p>" + para.map(inline).join("<br>") + "</p>";
    para = [];
  };
  const endList = () => {
    if (list) html += "</" + list + ">";
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = /^\s*```\s*([\w+-]*)/.exec(line);
    if (fence) {
      flush();
      endList();
      const body = [];
      for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i]); i++) body.push(lines[i]);
      const lang = fence[1].toLowerCase();
      html += '<pre class="code"' + (lang ? ' data-lang="' + esc(lang) + '"' : "") + "><code>" + highlight(body.join("\n"), lang) + "</code></pre>";
      continue;
    }
    let m;
    if ((m = /^(#{1,6})\s+(.*)$/.exec(line))) {
      flush();
      endList();
      const n = Math.min(m[1].length + 2, 6);
      html += "<h" + n + ">" + inline(m[2]) + "</h" + n + ">";
    } else if ((m = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(line))) {
      flush();
      const kind = /\d/.test(m[1]) ? "ol" : "ul";
      if (list !== kind) {
        endList();
        html += "<" + kind + ">";
        list = kind;
      }
      html += "<li>" + inline(m[2]) + "</li>";
    } else if ((m = /^>\s?(.*)$/.exec(line))) {
      flush();
      endList();
      html += "<blockquote>" + inline(m[1]) + "</blockquote>";
    } else if (line.trim() === "") {
      flush();
      endList();
    } else {
      endList();
      para.push(line);
    }
  }
  flush();
  endList();
  return html;
}

// diffLines is a line diff of a and b: the common head and tail, and between them an
// LCS diff when it is small enough, else the old lines then the new.
export function diffLines(a, b) {
  const x = a === undefined || a === null ? [] : a.split("\n");
  const y = b.split("\n");
  let head = 0;
  while (head < x.length && head < y.length && x[head] === y[head]) head++;
  let tail = 0;
  while (tail < x.length - head && tail < y.length - head && x[x.length - 1 - tail] === y[y.length - 1 - tail]) tail++;
  const xs = x.slice(head, x.length - tail);
  const ys = y.slice(head, y.length - tail);
  const out = [];
  for (const l of x.slice(Math.max(0, head - 3), head)) out.push([" ", l]);
  if (xs.length * ys.length <= 250000) {
    const n = xs.length, m = ys.length;
    const t = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) t[i][j] = xs[i] === ys[j] ? t[i + 1][j + 1] + 1 : Math.max(t[i + 1][j], t[i][j + 1]);
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && xs[i] === ys[j]) (out.push([" ", xs[i]]), i++, j++);
      else if (j < m && (i === n || t[i][j + 1] >= t[i + 1][j])) out.push(["+", ys[j++]]);
      else out.push(["-", xs[i++]]);
    }
  } else {
    for (const l of xs) out.push(["-", l]);
    for (const l of ys) out.push(["+", l]);
  }
  for (const l of y.slice(y.length - tail, Math.min(y.length, y.length - tail + 3))) out.push([" ", l]);
  return out;
}

export function diffHTML(d) {
  return (
    '<pre class="diff">' +
    diffLines(d.oldText, d.newText)
      .map(([k, l]) => '<span class="' + (k === "+" ? "add" : k === "-" ? "del" : "ctx") + '">' + esc(k + " " + l) + "</span>")
      .join("\n") +
    "</pre>"
  );
}
