// The login page: trades the token of the printed link (#token=…), or one typed in,
// for the HttpOnly cookie (POST /login), then loads the app. The token leaves the
// address bar at once, so it is not kept in the history.
const form = document.getElementById("login-form");
const input = document.getElementById("login-token");
const error = document.getElementById("login-error");

async function login(token) {
  error.textContent = "";
  const res = await fetch("/login", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ token }),
    credentials: "same-origin",
  });
  if (res.status === 204) {
    location.replace("/");
    return;
  }
  error.textContent = res.status === 401 ? "That token was refused." : "Login failed: " + (await res.text());
}

function fromLink() {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (m) {
    history.replaceState(null, "", location.pathname);
    login(decodeURIComponent(m[1]));
  }
}
fromLink();
window.addEventListener("hashchange", fromLink);
form.addEventListener("submit", (e) => {
  e.preventDefault();
  login(input.value.trim());
});
