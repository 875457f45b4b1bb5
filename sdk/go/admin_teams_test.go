package tollgate_test

import (
	"fmt"
	"testing"
	"time"

	tollgate "github.com/tollgate-gateway/tollgate/sdk/go"
)

// A team: created, changed, named by a key whose requests the log and usage attribute to it, and
// deletable only once no key names it.
func TestTeams(t *testing.T) {
	ctx := testContext(t)
	admin := adminClient(t)
	team, err := admin.Teams.Create(ctx, tollgate.TeamCreate{Name: "search", Budget: tollgate.Ptr(50.0), BudgetPeriod: tollgate.BudgetWeekly})
	if err != nil {
		t.Fatal(err)
	}
	if team.ID == "" || team.Budget == nil || *team.Budget != 50 || team.Spend != 0 {
		t.Fatalf("created %+v", team)
	}
	renamed, err := admin.Teams.Update(ctx, team.ID, tollgate.TeamUpdate{Name: tollgate.Ptr("search-v2"), RateLimit: tollgate.Value(600)})
	if err != nil {
		t.Fatal(err)
	}
	if renamed.Name != "search-v2" || renamed.RateLimit == nil || *renamed.RateLimit != 600 || renamed.Budget == nil {
		t.Fatalf("updated %+v", renamed)
	}
	teams, err := admin.Teams.List(ctx)
	if err != nil || !containsTeam(teams, team.ID) {
		t.Fatalf("List %v (%v)", teams, err)
	}

	key := createKey(t, tollgate.KeyCreate{Name: "team-member", Team: team.ID})
	answer, err := keyClient(t, key.Key).Chat.Create(ctx, hello())
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, func() error {
		entry, err := admin.Logs.Get(ctx, answer.RequestID)
		if err != nil {
			return err
		}
		if entry.TeamID == nil || *entry.TeamID != team.ID {
			return fmt.Errorf("entry team %v", entry.TeamID)
		}
		return nil
	})
	eventually(t, 5*time.Second, func() error {
		report, err := admin.Usage.Get(ctx, tollgate.UsageQuery{GroupBy: tollgate.GroupByTeam, Interval: tollgate.IntervalDay})
		if err != nil {
			return err
		}
		if total, ok := report.Total(team.ID); !ok || total.Requests != 1 {
			return fmt.Errorf("team totals %+v", total)
		}
		// The same by the local days of a zone: buckets start at its midnight, with its offset.
		local, err := admin.Usage.Get(ctx, tollgate.UsageQuery{GroupBy: tollgate.GroupByTeam, Interval: tollgate.IntervalDay, TimeZone: "Asia/Tokyo"})
		if err != nil {
			return err
		}
		if local.TimeZone != "Asia/Tokyo" {
			return fmt.Errorf("report zone %q", local.TimeZone)
		}
		if total, ok := local.Total(team.ID); !ok || total.Requests != 1 {
			return fmt.Errorf("team totals by Tokyo days %+v", total)
		}
		for _, row := range local.Data {
			if _, offset := row.Start.Zone(); offset != 9*3600 || row.Start.Hour() != 0 {
				return fmt.Errorf("bucket %v is not a Tokyo midnight", row.Start)
			}
		}
		return nil
	})
	charged, err := admin.Teams.Get(ctx, team.ID)
	if err != nil {
		t.Fatal(err)
	}
	if charged.Requests != 1 || charged.Spend <= 0 {
		t.Fatalf("the team was not charged: %d requests, %v spent", charged.Requests, charged.Spend)
	}

	err = admin.Teams.Delete(ctx, team.ID)
	requireAPIError(t, err, 409, "invalid_request_error", "team_in_use")
	if err := admin.Keys.Delete(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	if err := admin.Teams.Delete(ctx, team.ID); err != nil {
		t.Fatal(err)
	}
	_, err = admin.Teams.Get(ctx, team.ID)
	requireAPIError(t, err, 404, "invalid_request_error", "team_not_found")
}

func containsTeam(teams []tollgate.Team, id string) bool {
	for _, team := range teams {
		if team.ID == id {
			return true
		}
	}
	return false
}
