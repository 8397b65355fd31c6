package vulkan

import "testing"

// TestRobustBufferAccess: a device opens without robustBufferAccess unless Options asks for it,
// and with it where the device supports it (lavapipe does); the feature chain asks for exactly
// robustBufferAccess on top of the default features.
func TestRobustBufferAccess(t *testing.T) {
	plain := openDevice(t, Options{})
	if plain.Info().RobustBufferAccessEnabled {
		t.Error("robustBufferAccess enabled without Options.RobustBufferAccess")
	}
	robust := openDevice(t, Options{RobustBufferAccess: true})
	info := robust.Info()
	if info.RobustBufferAccessEnabled != info.RobustBufferAccess {
		t.Errorf("supported %v, enabled %v", info.RobustBufferAccess, info.RobustBufferAccessEnabled)
	}
	if info.EnabledFeatures != plain.Info().EnabledFeatures {
		t.Errorf("robust device enables %+v, plain %+v", info.EnabledFeatures, plain.Info().EnabledFeatures)
	}
	t.Logf("%s: robustBufferAccess supported %v", info.Name, info.RobustBufferAccess)
}
