import { useEffect } from 'preact/hooks';
import { Layout, type NavItem } from './components/layout.js';
import { AlertsPage } from './pages/alerts.js';
import { AuditPage } from './pages/audit.js';
import { GuardrailsPage } from './pages/guardrails.js';
import { KeysPage } from './pages/keys.js';
import { LogDetailPage } from './pages/log-detail.js';
import { LogsPage } from './pages/logs.js';
import { McpPage } from './pages/mcp.js';
import { OverviewPage } from './pages/overview.js';
import { ProviderDetailPage } from './pages/provider-detail.js';
import { ProvidersPage } from './pages/providers.js';
import { RoutesPage } from './pages/routes.js';
import { SettingsPage } from './pages/settings.js';
import { SpendPage } from './pages/spend.js';
import { useLocation } from './router.js';

/** Only pages that work are listed; providers, routes and settings come later (issue 18). */
const NAV: NavItem[] = [
  { path: '/', label: 'Overview' },
  { path: '/logs', label: 'Request logs' },
  { path: '/keys', label: 'Keys & teams' },
  { path: '/spend', label: 'Spend' },
  { path: '/providers', label: 'Providers' },
  { path: '/routes', label: 'Routes' },
  { path: '/alerts', label: 'Alerts' },
  { path: '/guardrails', label: 'Guardrails' },
  { path: '/mcp', label: 'MCP' },
  { path: '/settings', label: 'Settings' },
  { path: '/audit', label: 'Audit log' },
];

export function App() {
  const location = useLocation();
  const section = `/${location.path.split('/')[1] ?? ''}`;
  const logId = location.path.startsWith('/logs/') ? decodeURIComponent(location.path.slice('/logs/'.length)) : null;
  const providerName = location.path.startsWith('/providers/') ? decodeURIComponent(location.path.slice('/providers/'.length)) : null;
  const current = NAV.find((item) => item.path === section);

  useEffect(() => {
    document.title = `${current?.label ?? 'Not found'} · tollgate`;
  }, [current]);

  let page;
  if (logId) page = <LogDetailPage id={logId} />;
  else if (section === '/') page = <OverviewPage />;
  else if (section === '/logs') page = <LogsPage location={location} />;
  else if (section === '/keys') page = <KeysPage />;
  else if (section === '/spend') page = <SpendPage location={location} />;
  else if (providerName) page = <ProviderDetailPage name={providerName} />;
  else if (section === '/providers') page = <ProvidersPage />;
  else if (section === '/routes') page = <RoutesPage />;
  else if (section === '/alerts') page = <AlertsPage />;
  else if (section === '/guardrails') page = <GuardrailsPage />;
  else if (section === '/mcp') page = <McpPage />;
  else if (section === '/settings') page = <SettingsPage />;
  else if (section === '/audit') page = <AuditPage location={location} />;
  else
    page = (
      <section>
        <h1>Page not found</h1>
        <p>
          There is no dashboard page at <code>#{location.path}</code>. <a href="#/">Go to the overview</a>.
        </p>
      </section>
    );
  return (
    <Layout items={NAV} current={section}>
      {page}
    </Layout>
  );
}
