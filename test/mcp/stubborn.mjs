// A stdio "MCP server" that never answers and ignores the end of its stdin: only
// the kernel's PR_SET_PDEATHSIG (or a signal) ends it. It prints its pid to stderr.
process.stdin.resume();
process.stdin.on("end", () => {});
console.error("stubborn pid " + process.pid);
setInterval(() => {}, 1 << 30);
