//go:build windows

package hip

// rtHIPNames are the HIP runtime DLLs tried in order when ONESOURCE_HIP_LIBRARY is unset.
var rtHIPNames = []string{"amdhip64_7.dll", "amdhip64_6.dll", "amdhip64.dll"}

// rtHIPRTCNames are the HIPRTC DLLs tried in order when ONESOURCE_HIPRTC_LIBRARY is unset.
var rtHIPRTCNames = []string{"hiprtc0700.dll", "hiprtc0602.dll", "hiprtc0601.dll", "hiprtc0600.dll", "hiprtc0507.dll", "hiprtc0506.dll", "hiprtc0505.dll"}

// rtComgrNames are the AMD code-object manager DLLs.
var rtComgrNames = []string{"amd_comgr_3.dll", "amd_comgr_2.dll", "amd_comgr.dll"}

// rtROCmLibDirs are the folders beside the default search path where the HIP SDK keeps its DLLs.
var rtROCmLibDirs = []string{"$HIP_PATH/bin"}
