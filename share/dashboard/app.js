//  app.js - the dashboard's shell: token, theme, header and the router
//  between the views (#/ overview, #/contexts, #/c/<context id>).

import { adoptToken, token, setToken, onAuthError } from './api.js';
import { mountOverview } from './overview.js';
import { mountContexts } from './contexts.js';
import { mountContext } from './context.js';
import { h } from './util.js';

adoptToken ();

const main = document.getElementById ('main');
const statusDot = document.getElementById ('status');
const tokenForm = document.getElementById ('token-form');
const themeButton = document.getElementById ('theme');
let unmount = null;

//  The header's connection light: live, down or auth (a token is needed)
function setStatus (state, detail) {
    statusDot.className = 'status ' + state;
    statusDot.title = detail || state;
    statusDot.textContent = { live: 'live', down: 'unreachable', auth: 'token needed',
                              denied: 'not allowed' } [state] || state;
    if (state === 'auth')
        tokenForm.hidden = false;
}

onAuthError (() => setStatus ('auth', 'actd-http wants a valid token'));

tokenForm.addEventListener ('submit', (event) => {
    event.preventDefault ();
    setToken (tokenForm.elements.token.value.trim ());
    tokenForm.elements.token.value = '';
    tokenForm.hidden = true;
    route ();
});
tokenForm.hidden = true;
document.getElementById ('forget-token').addEventListener ('click', () => {
    setToken ('');
    tokenForm.hidden = false;
});
document.getElementById ('forget-token').hidden = !token ();

//  Theme: follows the system unless chosen (kept in localStorage)
const THEMES = ['auto', 'dark', 'light'];
function applyTheme (theme) {
    document.documentElement.dataset.theme = theme;
    themeButton.textContent = 'theme: ' + theme;
}
applyTheme (localStorage.getItem ('actd-dashboard-theme') || 'auto');
themeButton.addEventListener ('click', () => {
    const next = THEMES [(THEMES.indexOf (document.documentElement.dataset.theme) + 1) % THEMES.length];
    localStorage.setItem ('actd-dashboard-theme', next);
    applyTheme (next);
});

function navigate (hash) {
    window.location.hash = hash;
}

//  Mount the view the address names
function route () {
    unmount?.();
    unmount = null;
    main.replaceChildren ();
    const hash = window.location.hash.slice (1) || '/';
    const [path, search] = hash.split ('?');
    const query = new URLSearchParams (search || '');
    for (const link of document.querySelectorAll ('nav a'))
        link.classList.toggle ('on', link.dataset.view === (path.startsWith ('/c/') ? 'contexts' : path.slice (1) || 'overview'));
    const context = { setStatus, navigate, query };
    if (path === '/' || path === '') {
        document.title = 'actd · overview';
        unmount = mountOverview (main, context);
    }
    else if (path === '/contexts') {
        document.title = 'actd · contexts';
        unmount = mountContexts (main, context);
    }
    else if (path.startsWith ('/c/')) {
        const id = decodeURIComponent (path.slice (3));
        document.title = 'actd · ' + id;
        unmount = mountContext (main, { ...context, id });
    }
    else
        main.append (h ('p.empty', 'Nothing here. ', h ('a', { href: '#/' }, 'Back to the overview.')));
}

window.addEventListener ('hashchange', route);
route ();
